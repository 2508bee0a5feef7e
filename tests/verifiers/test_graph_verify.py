"""The verifier's graph writes: the batched CREATE of a run's trajectories (steps as list properties, a
REQUESTED edge per evidence object a step was answered with, `t` the step that first asked) gives exactly the
nodes, properties and edges the generic writer gives, a run scored in an earlier shape (Step nodes, no `t`) is
rewritten, and a run that names a task the graph lacks is refused whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from voe.errors import InputError, OntologyViolation
from voe.graph import EdgeRow, Graph, NodeRow
from voe.jsonl import read_jsonl
from voe.ontology import Label, Rel
from voe.replay.runner import run_policy
from voe.verifiers import graph_verify
from voe.verifiers.graph_verify import run_files_sha256, verify_run, write_run

SHAPE = """
MATCH (run:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)
OPTIONAL MATCH (tr)-[r:REQUESTED]->(e:Evidence)
OPTIONAL MATCH (tr)-[:ATTEMPTS]->(t:Task)
RETURN properties(run) AS run, labels(run) AS run_labels, properties(tr) AS tr, labels(tr) AS tr_labels,
       properties(r) AS r, e.id AS requested, t.id AS task, COUNT { (tr)--() } AS degree
ORDER BY tr.id, e.id
"""


def _generic_write(graph: Graph, run_dir: Path) -> str:
    """The generic writer's version of write_run (ontology-checked MERGE of every node and edge), for comparison."""
    info = json.loads((run_dir / "run.json").read_text())
    run_id = info["run_id"]
    nodes = [NodeRow(run_id, (Label.RUN,), {**{k: info[k] for k in ("policy", "passes", "seed", "content_hash", "tasks")},
                                            "files_sha256": "written by the generic writer",
                                            "graph_shape": graph_verify.GRAPH_SHAPE})]
    edges: list[EdgeRow] = []
    steps: dict[str, list[dict[str, Any]]] = {}
    for s in read_jsonl(run_dir / "steps.jsonl"):
        steps.setdefault(s["trajectory_id"], []).append(s)
    for tr in read_jsonl(run_dir / "trajectories.jsonl"):
        tid = tr["trajectory_id"]
        own = sorted(steps.get(tid, []), key=lambda x: x["t"])
        nodes.append(NodeRow(tid, (Label.TRAJECTORY,), {
            "pass_index": tr["pass_index"], "end": tr["end"], "terminal_class": tr["terminal_class"],
            "payload": tr["payload"],
            "step_action": [s["action"] or "" for s in own], "step_outcome": [s["outcome"] for s in own],
            "step_evidence_id": [s["evidence_id"] or "" for s in own]}))
        edges.append(EdgeRow(Rel.IN_RUN, tid, Label.TRAJECTORY, run_id, Label.RUN))
        edges.append(EdgeRow(Rel.ATTEMPTS, tid, Label.TRAJECTORY, tr["task_id"], Label.TASK))
        first: dict[str, int] = {}  # the step that first asked for each evidence object: the edge's `t`
        for s in own:
            if s["outcome"] in ("revealed", "unavailable"):
                first.setdefault(s["evidence_id"], s["t"])
        edges += [EdgeRow(Rel.REQUESTED, tid, Label.TRAJECTORY, e, Label.EVIDENCE, {"t": t}) for e, t in first.items()]
    graph.execute("verifiers/clear_run", run_id=run_id)
    with graph.writer() as w:
        w.nodes(nodes)
        w.edges(edges)
    return str(run_id)


def _shape(graph: Graph, run_id: str) -> list[dict[str, Any]]:
    """The run's graph, the digest of its files aside (the generic writer has none to give)."""
    with graph._driver.session(database=graph.settings.database) as session:
        rows = [r.data() for r in session.run(SHAPE, run_id=run_id)]
    for r in rows:
        r["run"].pop("files_sha256", None)
        for k in ("run_labels", "tr_labels"):
            r[k] = sorted(r[k] or [])
    return rows


def test_the_batched_write_makes_the_generic_writers_graph(package: Path, _session_graph: Graph,
                                                           tmp_path: Path) -> None:
    graph = _session_graph
    for policy in ("random", "request_everything"):
        run = tmp_path / policy
        run_policy(package, policy, 2, 3, run)
        run_id = _generic_write(graph, run)
        generic = _shape(graph, run_id)
        assert write_run(graph, run) == run_id
        batched = _shape(graph, run_id)
        assert len(batched) > 20 and batched == generic
        assert any(r["requested"] for r in batched)
        assert all("terminal" in r["tr"]["step_outcome"] for r in batched if r["tr"]["end"] == "terminal")
        write_run(graph, run)  # scoring again replaces, it does not add
        assert _shape(graph, run_id) == generic
    verdicts = verify_run(graph, tmp_path / "random")
    assert len(verdicts) == len(read_jsonl(tmp_path / "random" / "trajectories.jsonl"))
    # steps listed out of order (the runner writes them in order; the writer sorts only when they are not)
    steps = tmp_path / "request_everything" / "steps.jsonl"
    steps.write_text("".join(reversed(steps.read_text().splitlines(keepends=True))))
    write_run(graph, tmp_path / "request_everything")
    assert _shape(graph, run_id) == generic


def test_steps_in_any_order_give_the_same_graph_streamed_or_grouped_first(
        package: Path, _session_graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """steps.jsonl as the runner writes it (trajectory by trajectory, in the order of trajectories.jsonl) is parsed
    batch by batch as the batches are written; any other order, and a trajectory without steps, is rolled back
    and written from the whole file grouped first. Both give the generic writer's graph."""
    graph = _session_graph
    monkeypatch.setattr("voe.verifiers.graph_verify.BATCH_TRAJECTORIES", 7)  # several batches
    run = tmp_path / "run"
    run_policy(package, "random", 2, 3, run)
    run_id = _generic_write(graph, run)
    generic = _shape(graph, run_id)
    trajectories = (run / "trajectories.jsonl").read_text().splitlines(keepends=True)
    assert len(trajectories) > 3 * 7
    streamed = []  # which path wrote it: the whole-file path is taken only after the streamed one gave up
    real = graph_verify._steps_by_trajectory
    monkeypatch.setattr("voe.verifiers.graph_verify._steps_by_trajectory",
                        lambda r, whole: (streamed.append(not whole), real(r, whole))[1])
    steps = (run / "steps.jsonl").read_text().splitlines(keepends=True)
    tid = [json.loads(x)["trajectory_id"] for x in steps]
    swap = next(n for n in range(1, len(steps) - 1) if tid[n] != tid[n + 1] and tid[n - 1] == tid[n])
    interleaved = [*steps[:swap], steps[swap + 1], steps[swap], *steps[swap + 2:]]
    for order, lines, paths in (("as written", steps, [True]), ("interleaved", interleaved, [True, False]),
                                ("reversed", steps[::-1], [True, False])):
        (run / "steps.jsonl").write_text("".join(lines))
        streamed.clear()
        graph.execute("verifiers/clear_run", run_id=run_id)
        write_run(graph, run)
        assert (order, _shape(graph, run_id)) == (order, generic)
        assert (order, streamed) == (order, paths)
    # a trajectory that ended without a terminal step and has no steps at all
    first = json.loads(trajectories[0])
    (run / "trajectories.jsonl").write_text("".join([_with(trajectories[0], terminal_class=None, payload=None, end="budget",
                                                           steps=0) + "\n", *trajectories[1:]]))
    (run / "steps.jsonl").write_text("".join(x for x in steps if json.loads(x)["trajectory_id"] != first["trajectory_id"]))
    graph.execute("verifiers/clear_run", run_id=run_id)
    generic = _shape(graph, _generic_write(graph, run))
    streamed.clear()
    write_run(graph, run)
    assert _shape(graph, run_id) == generic and streamed == [True, False]
    assert [r["tr"]["step_outcome"] for r in generic if r["tr"]["id"] == first["trajectory_id"]] == [[]]


def test_an_error_in_the_last_batch_rolls_back_the_earlier_ones(
        package: Path, _session_graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batches are written as the steps are read, in one transaction: a step refused near the end leaves the
    graph's earlier copy of the run as it was, not cleared and not half rewritten."""
    graph = _session_graph
    monkeypatch.setattr("voe.verifiers.graph_verify.BATCH_TRAJECTORIES", 5)
    run = tmp_path / "run"
    run_policy(package, "reference", 1, 0, run)
    run_id = write_run(graph, run)
    before = _shape(graph, run_id)
    steps = (run / "steps.jsonl").read_text().splitlines()
    assert json.loads(steps[-1])["outcome"] == "terminal" and len(before) > 3 * 5
    (run / "steps.jsonl").write_text("\n".join([*steps[:-1], _with(steps[-1], action=None)]) + "\n")
    with pytest.raises(InputError, match="the terminal step of .* names no action"):
        write_run(graph, run)
    assert _shape(graph, run_id) == before


def _held(graph: Graph, run_id: str) -> tuple[str, int, int, int]:
    """The Run's digest, its trajectories, their steps (listed), and how many trajectories carry the test's
    marker."""
    with graph._driver.session(database=graph.settings.database) as session:
        row = session.run("MATCH (run:Run {id: $run_id}) RETURN run.files_sha256 AS d, "
                          "COUNT { (run)<-[:IN_RUN]-(:Trajectory) } AS tr, "
                          "reduce(n = 0, k IN COLLECT { MATCH (run)<-[:IN_RUN]-(t:Trajectory) "
                          "RETURN size(t.step_outcome) } | n + k) AS st, "
                          "COUNT { (run)<-[:IN_RUN]-(t:Trajectory) WHERE t.marker = 1 } AS marked",
                          run_id=run_id).single()
    assert row is not None
    return row["d"], row["tr"], row["st"], row["marked"]


def test_scoring_the_same_files_again_writes_nothing_and_changed_files_are_rewritten(
        package: Path, _session_graph: Graph, tmp_path: Path) -> None:
    graph = _session_graph
    run = tmp_path / "run"
    run_policy(package, "random", 2, 5, run)
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    n_steps = len((run / "steps.jsonl").read_text().splitlines())
    first = verify_run(graph, run)
    assert _held(graph, run_id) == (run_files_sha256(run), len(first), n_steps, 0)
    with graph._driver.session(database=graph.settings.database) as session:  # a mark a rewrite would remove
        session.run("MATCH (:Run {id: $run_id})<-[:IN_RUN]-(t:Trajectory) SET t.marker = 1", run_id=run_id).consume()
    assert verify_run(graph, run) == first
    assert _held(graph, run_id) == (run_files_sha256(run), len(first), n_steps, len(first))  # not rewritten
    # the same run id from other files (an LLM agent run again into the folder): the graph's copy is replaced
    lines = (run / "trajectories.jsonl").read_text().splitlines(keepends=True)
    kept = {json.loads(x)["trajectory_id"] for x in lines[: len(lines) // 2]}
    (run / "trajectories.jsonl").write_text("".join(lines[: len(lines) // 2]))
    steps = [x for x in (run / "steps.jsonl").read_text().splitlines(keepends=True)
             if json.loads(x)["trajectory_id"] in kept]
    (run / "steps.jsonl").write_text("".join(steps))
    third = verify_run(graph, run)
    assert {v.trajectory_id for v in third} == kept
    assert _held(graph, run_id) == (run_files_sha256(run), len(kept), len(steps), 0)


def test_a_run_naming_a_task_the_graph_lacks_is_refused_whole(package: Path, _session_graph: Graph,
                                                              tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_policy(package, "refuse_all", 1, 0, run)
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["task_id"] = "task:not-in-the-graph"
    (run / "trajectories.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    with pytest.raises(OntologyViolation, match="1 trajectories name a task"):
        write_run(_session_graph, run)
    assert _shape(_session_graph, run_id) == []  # nothing of the run was written


def test_a_step_the_files_get_wrong_is_reported_before_a_task_the_graph_lacks(
        package: Path, _session_graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch is sent before the last steps are read: its missing task must not hide the input error
    further on (an input error is exit 2, a graph that lacks the task exit 1)."""
    monkeypatch.setattr("voe.verifiers.graph_verify.BATCH_TRAJECTORIES", 3)
    run = tmp_path / "run"
    run_policy(package, "reference", 1, 0, run)
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    (run / "trajectories.jsonl").write_text("\n".join([_with(lines[0], task_id="task:not-in-the-graph"), *lines[1:]])
                                            + "\n")
    steps = (run / "steps.jsonl").read_text().splitlines()
    (run / "steps.jsonl").write_text("\n".join([*steps[:-1], _with(steps[-1], action=None)]) + "\n")
    with pytest.raises(InputError, match="the terminal step of .* names no action"):
        write_run(_session_graph, run)
    (run / "steps.jsonl").write_text("\n".join(steps) + "\n")  # with the steps mended, the task is what is wrong
    with pytest.raises(OntologyViolation, match="1 trajectories name a task"):
        write_run(_session_graph, run)


def test_a_run_naming_evidence_the_graph_lacks_is_refused_whole(package: Path, _session_graph: Graph,
                                                                tmp_path: Path) -> None:
    """Evidence is looked up once per batch and named by position: a missing one must not shift the others onto
    the wrong requests, it must refuse the run."""
    run = tmp_path / "run"
    run_policy(package, "request_everything", 1, 0, run)
    steps = (run / "steps.jsonl").read_text().splitlines()
    asked = [n for n, x in enumerate(steps) if json.loads(x)["outcome"] == "revealed"]
    steps[asked[0]] = _with(steps[asked[0]], evidence_id="evidence:not-in-the-graph")
    (run / "steps.jsonl").write_text("\n".join(steps) + "\n")
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    with pytest.raises(OntologyViolation, match="0 trajectories name a task and 1 steps an evidence id"):
        write_run(_session_graph, run)
    assert _shape(_session_graph, run_id) == []


def _with(line: str, **changes: Any) -> str:
    return json.dumps({**json.loads(line), **changes})


def test_trajectories_left_by_a_run_node_deleted_by_hand_are_replaced(package: Path, _session_graph: Graph,
                                                                      tmp_path: Path) -> None:
    """A Run deleted in the Browser (DETACH DELETE) leaves its trajectories: scoring the run again must replace
    them, not stop on the id constraint, and must leave other runs' trajectories alone."""
    graph = _session_graph
    run, other = tmp_path / "run", tmp_path / "other"
    run_policy(package, "reference", 1, 0, run)
    run_policy(package, "random", 1, 0, other)
    run_id, other_id = write_run(graph, run), write_run(graph, other)
    expected, kept = _shape(graph, run_id), _shape(graph, other_id)
    with graph._driver.session(database=graph.settings.database) as session:
        session.run("MATCH (run:Run {id: $run_id}) DETACH DELETE run", run_id=run_id).consume()
    trajectories = len({r["tr"]["id"] for r in expected})
    assert len(verify_run(graph, run)) == trajectories
    assert _shape(graph, run_id) == expected and _shape(graph, other_id) == kept
    with graph._driver.session(database=graph.settings.database) as session:
        left = session.run("MATCH (tr:Trajectory) WHERE tr.id STARTS WITH $run_id + '/' RETURN count(tr) AS n",
                           run_id=run_id).single()
    assert left is not None and left["n"] == trajectories


def test_a_run_scored_in_the_step_node_shape_is_rewritten_in_the_list_shape(package: Path, _session_graph: Graph,
                                                                            tmp_path: Path) -> None:
    """A graph scored before issue 13 holds a Step node per step; scoring the same files again must not keep that
    copy (the verifier reads the step lists), and clearing the run must take its Step nodes with it."""
    graph = _session_graph
    run = tmp_path / "run"
    run_policy(package, "request_everything", 1, 0, run)
    run_id = write_run(graph, run)
    expected = _shape(graph, run_id)
    with graph._driver.session(database=graph.settings.database) as session:  # what shape 1 wrote, in miniature
        session.run("MATCH (run:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)-[r:REQUESTED]->(e:Evidence) "
                    "CREATE (tr)-[:HAS_STEP]->(s:Node:Step {id: tr.id + '#' + e.id})-[:REQUESTED]->(e) "
                    "DELETE r REMOVE tr.step_action, tr.step_outcome, tr.step_evidence_id "
                    "REMOVE run.graph_shape", run_id=run_id).consume()
    write_run(graph, run)
    assert _shape(graph, run_id) == expected
    with graph._driver.session(database=graph.settings.database) as session:
        assert session.run("MATCH (s:Step) RETURN count(s) AS n").single()["n"] == 0  # type: ignore[index]


def test_a_run_scored_in_shape_3_gets_the_step_of_each_request(package: Path, _session_graph: Graph,
                                                                tmp_path: Path) -> None:
    """Shape 3's REQUESTED edges had no `t`: scoring the same files again writes each with the step that first
    asked (the Browser's trajectory view draws them in that order)."""
    graph = _session_graph
    run = tmp_path / "run"
    run_policy(package, "request_everything", 1, 0, run)
    run_id = write_run(graph, run)
    expected = _shape(graph, run_id)
    assert [r for r in expected if r["r"]] and all(isinstance(r["r"]["t"], int) for r in expected if r["r"])
    for r in expected:
        if r["r"]:
            assert r["tr"]["step_evidence_id"].index(r["requested"]) == r["r"]["t"]
    with graph._driver.session(database=graph.settings.database) as session:  # what shape 3 wrote
        session.run("MATCH (run:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)-[r:REQUESTED]->() "
                    "REMOVE r.t SET run.graph_shape = 3", run_id=run_id).consume()
    assert _shape(graph, run_id) != expected
    write_run(graph, run)
    assert _shape(graph, run_id) == expected


def test_a_run_scored_in_shape_2_loses_the_copies_shape_3_leaves_out(package: Path, _session_graph: Graph,
                                                                     tmp_path: Path) -> None:
    """Shape 2 kept task_id, policy and the step count on every trajectory; scoring the same files again writes
    the run in shape 3, without them."""
    graph = _session_graph
    run = tmp_path / "run"
    run_policy(package, "request_everything", 1, 0, run)
    run_id = write_run(graph, run)
    expected = _shape(graph, run_id)
    assert expected and not any({"task_id", "policy", "steps"} & r["tr"].keys() for r in expected)
    with graph._driver.session(database=graph.settings.database) as session:  # what shape 2 wrote
        session.run("MATCH (run:Run {id: $run_id})<-[:IN_RUN]-(tr:Trajectory)-[:ATTEMPTS]->(t:Task) "
                    "SET tr.task_id = t.id, tr.policy = run.policy, tr.steps = size(tr.step_action), "
                    "run.graph_shape = 2", run_id=run_id).consume()
    assert _shape(graph, run_id) != expected
    write_run(graph, run)
    assert _shape(graph, run_id) == expected


def test_a_run_whose_files_disagree_is_an_input_error_and_nothing_of_it_is_written(package: Path, tmp_path: Path,
                                                                                   _session_graph: Graph) -> None:
    run = tmp_path / "run"
    run_policy(package, "reference", 1, 0, run)  # a request, then a terminal step
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    _session_graph.execute("verifiers/clear_run", run_id=run_id)
    trajectories = (run / "trajectories.jsonl").read_text().splitlines()
    steps = (run / "steps.jsonl").read_text().splitlines()
    last = steps[-1]  # a trajectory's terminal step, written last: a copy at the next t is a second terminal step
    last_t = json.loads(last)["t"]
    assert json.loads(last)["outcome"] == "terminal"
    cases = {"more than once": (trajectories + trajectories[:1], steps),
             "a step of .* more than once": (trajectories, steps + steps[:1]),
             "which trajectories.jsonl does not list": (trajectories[1:], steps),
             "not numbered 0, 1, 2": (trajectories, [_with(steps[0], t=5), *steps[1:]]),
             "has a t that is not an integer": (trajectories, [_with(steps[0], t="0"), *steps[1:]]),
             "ends with \\w+ .* its steps with not_a_class": (
                 trajectories, [_with(x, action="not_a_class") if json.loads(x)["outcome"] == "terminal" else x
                                for x in steps]),
             "the terminal step of .* names no action": (
                 trajectories, [_with(x, action=None) if json.loads(x)["outcome"] == "terminal" else x
                                for x in steps]),
             "more than one terminal step": (trajectories, steps + [_with(last, t=last_t + 1)]),
             "which is not a trajectory of run:reference": (
                 [*trajectories[:2], _with(trajectories[2], trajectory_id="run:other/" + json.loads(trajectories[2])[
                     "trajectory_id"]), *trajectories[3:]], steps),
             "counts 99 steps, steps.jsonl holds": ([_with(trajectories[0], steps=99), *trajectories[1:]], steps),
             "is of policy someone_else, the run of reference": (
                 [*trajectories[:-1], _with(trajectories[-1], policy="someone_else")], steps),
             "summary 2 is not a JSON object": ([trajectories[0], "[1, 2]", *trajectories[2:]], steps),
             "summary 1 has no end, task_id": ([json.dumps({k: v for k, v in json.loads(trajectories[0]).items()
                                                            if k not in ("task_id", "end")}), *trajectories[1:]], steps),
             "has a payload that is not a list of ids": ([_with(trajectories[0], payload=[{"id": 1}]),
                                                         *trajectories[1:]], steps),
             "step 2 is not a step": (trajectories, [steps[0], "42", *steps[1:]]),
             "step 1 has an outcome, action or evidence_id that is not a string": (
                 trajectories, [_with(steps[0], action={"name": "x"}), *steps[1:]]),
             "carries a payload but is not terminal": (
                 trajectories, [_with(x, payload=["ev"]) if json.loads(x)["outcome"] != "terminal" else x
                                for x in steps])}
    for message, (tr_lines, step_lines) in cases.items():
        (run / "trajectories.jsonl").write_text("\n".join(tr_lines) + "\n")
        (run / "steps.jsonl").write_text("\n".join(step_lines) + "\n")
        with pytest.raises(InputError, match=message):
            write_run(_session_graph, run)
        assert (message, _shape(_session_graph, run_id)) == (message, [])
