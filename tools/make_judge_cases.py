"""Write compiler/judge_cases.jsonl: the judge's fixed calibration cases, from real tasks of the shared archives.

    NEO4J_URI=... python tools/make_judge_cases.py PACKAGE

PACKAGE is a package compiled from the shared archives (`voe compile --archives ...`). Accept cases are real
tasks as they are (one per family where the package has it, then others); each reject is a real task with
one criterion broken on purpose, two per criterion. The file is committed; rerun this only when the task
format changes, and review the diff.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from voe.artifacts.package import load_package  # noqa: E402
from voe.compiler.judge import CASES, judge_input  # noqa: E402


def main() -> None:
    views, evidence, answers, _ = load_package(Path(sys.argv[1]))
    tasks = sorted(views, key=lambda v: (answers[v.task_id].family.value, v.task_id))
    by_family: dict[str, list[Any]] = {}
    for v in tasks:
        by_family.setdefault(answers[v.task_id].family.value, []).append(v)
    picked = [vs[0] for vs in by_family.values()] + [vs[1] for vs in by_family.values() if len(vs) > 1]
    picked += [v for v in tasks if v not in picked]
    cases: list[dict[str, Any]] = []
    for v in picked[:12]:
        cases.append({"id": f"accept-{len(cases) + 1:02d}", "expect": "accept", "broken": None,
                      "note": f"real task {v.task_id} ({answers[v.task_id].family.value}) as compiled",
                      "input": judge_input(v, answers[v.task_id], evidence)})
    rejects = picked[12:] + picked  # the rejects start from other tasks where there are enough
    k = 0

    def base() -> tuple[Any, dict[str, Any]]:
        nonlocal k
        v = rejects[k % len(rejects)]
        k += 1
        return v, judge_input(v, answers[v.task_id], evidence)

    def add(broken: str, note: str, inp: dict[str, Any], v: Any) -> None:
        n = sum(1 for c in cases if c["expect"] == "reject") + 1
        cases.append({"id": f"reject-{n:02d}-{broken}", "expect": "reject", "broken": broken,
                      "note": f"{note} (from {v.task_id})", "input": inp})

    for _ in range(2):
        v, inp = base()
        other = next(o for o in tasks if o.workflow_id != v.workflow_id)
        inp["question"] = other.question
        add("matches_decision", "the question of a task of another workflow: it asks about another subject", inp, v)
        v, inp = base()
        gone = inp["verifier"]["binding"][0]
        inp["menu"] = [m for m in inp["menu"] if m["entry_id"] != gone]
        add("covers_evidence", f"the menu lost {gone}, an item the decision must rest on", inp, v)
        v, inp = base()
        inp["verifier"]["reference_path"][-1]["payload"] = ["(not on the menu) ev:unrelated/item"]
        inp["verifier"]["must_name"] = {t: ["(not on the menu) ev:unrelated/item"]
                                        for t in inp["verifier"]["accepted_terminal"]}
        add("binds_verifier", "the reference answer names an item that is not on the menu and never pulled", inp, v)
        v, inp = base()
        for entry in inp["verifier"]["binding"]:
            if entry in inp["requests_return"]:
                inp["requests_return"][entry] = {"status": "archived", "facts": []}
        add("useful_feedback", "requesting the decisive items returns no facts at all", inp, v)
        v, inp = base()
        head, _, rest = inp["question"].partition(". ")  # keep "Workflow: X.", replace the packet
        inp["question"] = (head + ". Which of these items would you find most interesting to read on a slow "
                           "afternoon? " + rest[rest.index("Request the evidence"):])
        add("grounded_mechanism", "the question is a generic ask, not this workflow's packet", inp, v)
        v, inp = base()
        terminal = inp["verifier"]["accepted_terminal"][0]
        item = (inp["verifier"]["binding"] or ["E1"])[0]
        inp["question"] = f"Hint: the right answer is {terminal} on {item}. " + inp["question"]
        add("separates_hidden", "the question states the answer", inp, v)
    CASES.write_text("".join(json.dumps(c, sort_keys=True, ensure_ascii=False) + "\n" for c in cases))
    print(f"{len(cases)} cases written to {CASES}")


if __name__ == "__main__":
    main()
