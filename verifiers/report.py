"""`voe report`: the headline table, per-family breakdown, codebook distribution, per-task table and plots for runs.

report.html is one self-contained file (styles, plots and the sorting script inline, nothing fetched), so it reads
the same when mailed; report.md, summaries.json and the plots as PNG and SVG are written beside it."""

from __future__ import annotations

import base64
import html
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voe.artifacts.scores import TrajectoryScore
from voe.verifiers.metrics import CODEBOOK
from voe.verifiers.report_plots import draw, policy_colours

NO_PLOTS = "matplotlib is not installed (pip install 'voe-evidence[report]')"
METRICS = (
    "Metrics (definitions in `verifiers/metrics.py`). Evidence-grounded valid: the terminal action is of a class "
    "the task accepts, its payload names only items the episode pulled, and those items are the ones the decision "
    "rests on. Action valid: the class alone. Useful precision: the useful items pulled over every request made. "
    "Evidence regret: useful items missed plus other items pulled, per trajectory. Cost score: max(0, valid - 0.5 x "
    "regret / horizon), 1 only for a valid path with no regret. Over-submit: a packet submitted where the reference "
    "does not submit. Unplayed: a task and pass the run never played, counted as not valid.")
DEFINITIONS = (
    "Intervals: the headline is clustered (cluster-robust standard error, "
    "exact t quantile) over groups of tasks linked by a workflow or a gold fact: tasks that share items, "
    "decisions or the fact their answer rests on are not independent. Beside it, the Student-t over passes "
    "(Wilson for one pass); a policy that scores the same on every pass has a zero-width per-pass interval, "
    "which says the rate did not move between passes, not that it is certain. Every value alike (0 or n of n) "
    "gets the exact Clopper-Pearson interval over the clusters, each counted once; one cluster, or a family of one "
    "task, gets no interval. A paired difference is per task (the "
    "mean over passes), its interval clustered the same way; the discordant tasks are those the two policies "
    "decide differently. The smallest detectable difference (voe/artifacts/clusters.py) is what the package can "
    "tell apart at all: a smaller difference between two policies is noise on this package.")
CAPTIONS = {
    "validity": "Evidence-grounded validity of each policy: one hollow dot per pass, the mean (diamond) with its "
                "95% interval clustered by workflow and gold fact.",
    "by_family": "Evidence-grounded validity by task family, with the clustered 95% interval; a zero is drawn as a "
                 "tick on the baseline.",
    "codebook": "Failure codebook: how many trajectories of each policy ended under each label; the shade is the "
                "share of the policy's trajectories.",
}


@dataclass(frozen=True)
class Cell:
    """A table cell: its text (Markdown and HTML), optional HTML to show instead, and the number it sorts by."""

    text: str
    markup: str | None = None
    key: float | None = None


Row = list[str | Cell]
_NUMBER = re.compile(r"^([+-]?\d|-$)")  # right-aligned in HTML: numbers, intervals, "4 x 1", "-" (none)


def _fmt(rate: dict[str, Any], tasks: int | None = None) -> str:
    """The headline: the mean with its clustered interval and how many clusters it rests on; no interval where
    none can be estimated (one task, one cluster of mixed values)."""
    if tasks == 1:
        return f"{rate['mean']:.3f} (one task: no interval)"
    lo, hi = rate["ci95"]
    clusters = rate.get("clusters", 0)
    if clusters == 1 and "clopper_pearson" not in rate.get("method", ""):
        return f"{rate['mean']:.3f} (one cluster: no interval)"
    return f"{rate['mean']:.3f} [{lo:.3f}, {hi:.3f}] ({clusters} cluster{'' if clusters == 1 else 's'})"


@dataclass(frozen=True)
class About:
    """What a report states of itself and of its tasks: voe's version, when it was written, and each task as a
    reader knows it (task id -> question, workflow title). `curator` adds a section with each task's family, which
    decides its answer: verifier-only, for the archive's curator, never for a policy."""

    version: str
    written: str
    questions: dict[str, tuple[str, str]]
    curator: bool = False


def about(questions: dict[str, tuple[str, str]] | None = None, curator: bool = False) -> About:
    """This voe's version and the time (SOURCE_DATE_EPOCH when set, for reproducible reports), in UTC."""
    import datetime as dt

    from voe import __version__
    from voe.settings import settings

    epoch = settings().source_date_epoch
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch and epoch.isdigit() else dt.datetime.now(dt.UTC)
    return About(__version__, when.strftime("%Y-%m-%dT%H:%M:%SZ"), questions or {}, curator)


def _passes(rate: dict[str, Any]) -> str:
    """The per-pass interval beside it; a zero-width one says it is the same rate every pass, not a certainty."""
    lo, hi = rate["ci95_passes"]
    if "zero width" in rate.get("passes_method", ""):
        return "zero width: same rate every pass"
    return f"[{lo:.3f}, {hi:.3f}]" + (" (Wilson, one pass)" if rate.get("passes_method") == "wilson" else "")


def policy_names(summaries: list[dict[str, Any]]) -> list[str]:
    """Each run's label: its policy, numbered when two runs share one, so a colour and a row name one run."""
    seen: Counter[str] = Counter()
    names = []
    for s in summaries:
        seen[s["policy"]] += 1
        names.append(s["policy"] if seen[s["policy"]] == 1 else f"{s['policy']} ({seen[s['policy']]})")
    return names


def _per_pass(summary: dict[str, Any], scores: list[TrajectoryScore] | None) -> list[float]:
    """Validity on each pass: the summary's, or from the scores for a summary written before it carried them."""
    if summary["evidence_grounded_valid"].get("per_pass"):
        return list(summary["evidence_grounded_valid"]["per_pass"])
    if not scores:
        return [summary["evidence_grounded_valid"]["mean"]]
    passes: dict[int, list[bool]] = defaultdict(list)
    for s in scores:
        passes[s.pass_index].append(s.valid)
    return [sum(v) / len(v) for _, v in sorted(passes.items())]


TASK_HEAD = ["question", "workflow", "policy", "valid passes", "cost score", "codebook label"]


def questions_of(runs: Sequence[Path]) -> dict[str, tuple[str, str]]:
    """Each task of the runs' packages as a reader knows it (question, workflow title), read from the package each
    run.json names; a package no longer there leaves its tasks named by id."""
    from voe.artifacts.package import load_package
    from voe.artifacts.run import read_run_info
    from voe.errors import VoeError

    out: dict[str, tuple[str, str]] = {}
    for run in runs:
        try:
            views = load_package(Path(read_run_info(run).package))[0]
        except VoeError:
            continue
        out.update({v.task_id: (v.question, v.workflow_title) for v in views})
    return out


def task_rows(names: list[str], scores: list[list[TrajectoryScore]],
              questions: dict[str, tuple[str, str]] | None = None) -> list[Row]:
    """One row per task and run, the task as a reader knows it (its question and workflow; the task id where the
    package is not at hand): validity over the passes, the mean cost score, the codebook labels. No family: it
    decides the answer (the curator's section has it)."""
    rows: list[Row] = []
    colours = policy_colours(names)
    questions = questions or {}
    for name, run in zip(names, scores, strict=True):
        tasks: dict[str, list[TrajectoryScore]] = defaultdict(list)
        for s in run:
            tasks[s.task_id].append(s)
        for task, ts in sorted(tasks.items(), key=lambda kv: (questions.get(kv[0], (kv[0], ""))[::-1], kv[0])):
            valid = sum(s.valid for s in ts)
            labels = Counter(s.label for s in ts).most_common()
            question, workflow = questions.get(task, (task, ""))
            rows.append([question, workflow, _swatch(name, colours[name]),
                         Cell(f"{valid}/{len(ts)}", key=valid / len(ts)),
                         f"{sum(s.cost_score for s in ts) / len(ts):.3f}",
                         ", ".join(label if c == 1 else f"{label} \u00d7{c}" for label, c in labels)])
    return rows


def curator_rows(scores: list[list[TrajectoryScore]], questions: dict[str, tuple[str, str]]) -> list[Row]:
    """Each task's id, question and family (verifier-only)."""
    family: dict[str, str] = {}
    for run in scores:
        for s in run:
            family.setdefault(s.task_id, s.family)
    return [[task, questions.get(task, (task, ""))[0], family[task]] for task in sorted(family)]


def _swatch(name: str, colour: str) -> Cell:
    return Cell(name, f'<span class=swatch style="background:{colour}"></span>{html.escape(name)}')


def _audit_cell(summary: dict[str, Any]) -> Cell:
    """A run's audit line (replay/run_audit.py, as `voe score` printed it); a failed one stands out."""
    audit = summary.get("audit")
    if audit is None:
        return Cell("not recorded (scored by a voe before runs audited themselves)")
    if audit["passed"]:
        return Cell(audit["line"])
    return Cell(f"**{audit['line']}**", f"<strong class=failed>{html.escape(audit['line'])}</strong>")


def failed_audits(names: list[str], summaries: list[dict[str, Any]]) -> list[str]:
    """The report's warning for each run whose audit failed: its numbers do not measure its policy."""
    return [f"Audit FAILED for {name}: {s['audit']['leaks']} message(s) given to its policy carried verifier-only "
            "terms, so its numbers do not measure the policy (the run's audit.json names them)."
            for name, s in zip(names, summaries, strict=True) if s.get("audit") and not s["audit"]["passed"]]


def write_report(summaries: list[dict[str, Any]], out: Path, paired: list[dict[str, Any]] | None = None,
                 scores: list[list[TrajectoryScore]] | None = None, info: About | None = None) -> Path:
    """The report of scored runs; `paired` holds each run's paired difference of validity against a chosen run
    (`voe report --against`) and `scores` each run's trajectory scores (the per-task table and, for summaries
    without them, the per-pass rates), both in the order of `summaries`. The plots need matplotlib (the `report`
    extra); without it the report holds the tables and says how to get the plots. `info`: what the report states of
    itself and how it names tasks (default: this voe, now, tasks by id)."""
    info = info or about()
    out.mkdir(parents=True, exist_ok=True)
    names = policy_names(summaries)
    colours = policy_colours(names)
    policy = [_swatch(n, colours[n]) for n in names]
    head = ["policy", "tasks x passes", "evidence-grounded valid (clustered 95% CI)", "per-pass 95% CI", "action valid",
            "useful precision", "evidence regret", "cost score", "over-submit"]
    rows: list[Row] = [
        [p, f"{s['tasks']} x {s['passes']}", _fmt(s["evidence_grounded_valid"]), _passes(s["evidence_grounded_valid"]),
         f"{s['action_valid']['mean']:.3f}", f"{s['useful_precision']:.3f}", f"{s['evidence_regret']:.2f}",
         f"{s['cost_score']:.3f}", f"{s['over_submit']:.3f}"] for p, s in zip(policy, summaries, strict=True)]
    families = sorted({f for s in summaries for f in s["by_family"]})
    fam_rows: list[Row] = [[f, *[(_fmt(s["by_family"][f]["evidence_grounded_valid"], s["by_family"][f]["tasks"])
                                  if f in s["by_family"] else "-") for s in summaries]] for f in families]
    code_rows: list[Row] = [[c, *[str(s["codebook"].get(c, 0)) for s in summaries]] for c in CODEBOOK]
    usage_head = ["policy", "model calls", "tokens in", "tokens out", "cost (USD)"]
    usage_rows: list[Row] = [[p, *[("-" if s.get("usage", {}).get(k) is None else str(s["usage"][k]))
                                   for k in ("calls", "tokens_in", "tokens_out", "cost")]]
                             for p, s in zip(policy, summaries, strict=True)]
    pair_head = ["policy", "against", "tasks", "mean difference (clustered 95% CI)", "discordant tasks (clusters)",
                 "only this valid", "only the other valid"]
    pair_rows: list[Row] = [
        [p, pr["against"], str(pr["tasks"]),
         f"{pr.get('mean_difference', 0.0):+.3f} [{pr['ci95'][0]:+.3f}, {pr['ci95'][1]:+.3f}]" if pr["tasks"] else "-",
         f"{len(pr.get('discordant_tasks', []))} ({len(pr.get('discordant_clusters', []))})" if pr["tasks"] else "-",
         str(pr.get("a_only_valid", 0)), str(pr.get("b_only_valid", 0))]
        for p, pr in zip(policy, paired or [], strict=False)]
    tasks = task_rows(names, scores, info.questions) if scores is not None else []
    # what each package the runs played can tell apart (its manifest's smallest detectable difference)
    packages = {str(s.get("package", {}).get("content_hash")): s.get("package", {}).get("detectable_difference")
                for s in summaries if s.get("package")}
    sdd_head = ["package", "tasks", "clusters", "effective tasks", "smallest detectable difference (95%, at 85%)",
                "discordant tasks needed"]
    sdd_rows: list[Row] = [[h[:12], str(d.get("tasks")), str(d.get("clusters")), str(d.get("effective_tasks")),
                            "-" if d.get("sdd") is None else f"{d['sdd']:.3f}", str(d.get("discordant_tasks") or "-")]
                           for h, d in sorted(packages.items()) if d]

    per_pass = [_per_pass(s, scores[i] if scores else None) for i, s in enumerate(summaries)]
    drawn = draw(summaries, names, per_pass, out)
    audit_rows: list[Row] = [[p, _audit_cell(s)] for p, s in zip(policy, summaries, strict=True)]
    sections: list[tuple[str, list[str], list[Row], str | None]] = [
        ("Headline", head, rows, "validity"),
        ("Run audit (what reached each policy; replay/run_audit.py)", ["policy", "audit"], audit_rows, None),
        ("By family (evidence-grounded valid, 95% CI)", ["family", *names], fam_rows, "by_family"),
        ("Failure codebook (trajectories per label)", ["label", *names], code_rows, "codebook"),
        ("Model usage", usage_head, usage_rows, None),
        *([("Paired difference of validity (per task, mean over passes)", pair_head, pair_rows, None)] if paired else []),
        *([("What the package can tell apart", sdd_head, sdd_rows, None)] if sdd_rows else []),
        *([("Curator's section: each task's family (verifier-only: it decides the answer; never give it to a "
            "policy)", ["task", "question", "family"], curator_rows(scores, info.questions), None)]
          if info.curator and scores else []),
    ]
    stated = _stated(summaries, info)
    warnings = failed_audits(names, summaries)
    (out / "report.md").write_text(_markdown(sections, drawn, bool(tasks), stated, warnings))
    (out / "report.html").write_text(_html(sections, drawn, out, (TASK_HEAD, tasks), summaries, stated, warnings))
    (out / "summaries.json").write_text(json.dumps(summaries, indent=2) + "\n")
    return out / "report.md"


def _stated(summaries: list[dict[str, Any]], info: About) -> str:
    """What the report is of: the packages by content hash, this voe's version, when it was written."""
    hashes = sorted({str(s.get("package", {}).get("content_hash") or "") for s in summaries} - {""})
    return (f"Package{'s' if len(hashes) != 1 else ''} {', '.join(hashes) or '(not recorded)'}; "
            f"voe {info.version}; written {info.written}.")


def _markdown(sections: list[tuple[str, list[str], list[Row], str | None]], drawn: bool, tasks: bool,
              stated: str, warnings: list[str]) -> str:
    def md(h: list[str], r: list[Row]) -> str:
        cells = [[_text(c) for c in row] for row in r]
        return "\n".join(["| " + " | ".join(h) + " |", "|" + "---|" * len(h)] + ["| " + " | ".join(x) + " |" for x in cells])

    parts = ["# voe run report", stated, *(f"> **{w}**" for w in warnings)]
    for title, h, r, plot in sections:
        parts += [f"## {title}", md(h, r)]
        if plot and drawn:
            parts.append(f"![{plot.replace('_', ' ')}]({plot}.png)\n\n*{CAPTIONS[plot]}*")
    if not drawn:
        parts.append(f"Plots not drawn: {NO_PLOTS}.")
    if tasks:
        parts.append("The per-task table (validity over passes, cost score and codebook label of every task and "
                     "policy, sortable) is in report.html.")
    return "\n\n".join([*parts, METRICS, DEFINITIONS, ""])


def _html(sections: list[tuple[str, list[str], list[Row], str | None]], drawn: bool, out: Path,
          tasks: tuple[list[str], list[Row]], summaries: list[dict[str, Any]], stated: str,
          warnings: list[str]) -> str:
    body = []
    for title, h, r, plot in sections:
        body.append(f"<h2>{html.escape(title)}</h2><div class=wide>{_table(h, r)}</div>")
        if plot and drawn:
            body.append(_figure(plot, out))
    if not drawn:
        body.append(f"<p class=note>Plots not drawn: {html.escape(NO_PLOTS)}.</p>")
    if tasks[1]:
        body.append("<h2>Per task</h2><p class=note>One row per task and policy. Click a column header to sort "
                    f"(again to reverse).</p><div class=scroll>{_table(*tasks, sortable=True)}</div>")
    runs = ", ".join(f"{s['policy']}: {s['tasks']} tasks x {s['passes']} passes" for s in summaries)
    return ("<!doctype html><html lang=en><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'><title>voe run report</title>"
            f"<style>{CSS}</style><main><h1>voe run report</h1><p class=note>{html.escape(runs)}</p>"
            f"<p class=note>{html.escape(stated)}</p>"
            + "".join(f"<p class=failed role=alert><strong>{html.escape(w)}</strong></p>" for w in warnings)
            + "".join(body) + f"<footer><p>{_code(html.escape(METRICS))}</p><p>{_code(html.escape(DEFINITIONS))}</p>"
            "</footer></main>"
            f"<script>{SORT_JS}</script></html>\n")


def _code(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _figure(plot: str, out: Path) -> str:
    """The PNG inline as a data: URI, so the page needs no file beside it; the SVG beside it is for papers."""
    data = base64.b64encode((out / f"{plot}.png").read_bytes()).decode("ascii")
    caption = html.escape(CAPTIONS[plot])
    return (f"<figure><img src='data:image/png;base64,{data}' alt='{caption}'>"
            f"<figcaption>{caption} Also as <code>{plot}.png</code> and <code>{plot}.svg</code>.</figcaption></figure>")


def _text(c: str | Cell) -> str:
    return c.text if isinstance(c, Cell) else c


def _table(head: list[str], rows: list[Row], sortable: bool = False) -> str:
    def td(c: str | Cell) -> str:
        cell = c if isinstance(c, Cell) else Cell(c)
        key = f" data-v={cell.key:.6g}" if cell.key is not None else ""
        num = " class=num" if _NUMBER.match(cell.text) else ""
        return f"<td{num}{key}>{cell.markup or html.escape(cell.text)}</td>"

    aligned = [bool(rows) and all(_NUMBER.match(_text(r[i])) for r in rows) for i in range(len(head))]
    cells = "".join(f"<th scope=col{' class=num' if a else ''}>{html.escape(h)}</th>"
                    for h, a in zip(head, aligned, strict=True))
    body = "".join("<tr>" + "".join(td(c) for c in row) + "</tr>" for row in rows)
    return f"<table{' class=sortable' if sortable else ''}><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


# light and dark by the reader's setting; the plots keep their white ground in both, as printed figures do
CSS = """
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1b1f24;--muted:#57606a;--rule:#d0d7de;--head:#f3f5f7;--stripe:#f8f9fa;
--bad:#cf222e}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9da7b3;--rule:#30363d;--head:#161b22;
--stripe:#121820;--bad:#ff7b72}}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 32px 48px}
h1{font-size:1.7em;margin:0 0 2px}
h2{font-size:1.2em;margin:2em 0 .6em;padding-bottom:4px;border-bottom:1px solid var(--rule)}
.note,figcaption,footer{color:var(--muted)}
.failed{color:var(--bad)}
table{border-collapse:collapse;font-size:13px;margin:8px 0 16px;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid var(--rule);text-align:left;vertical-align:bottom}
td{white-space:nowrap}
th{background:var(--head);font-weight:600;position:sticky;top:0;min-width:4em}
.num{text-align:right}
.wide{overflow-x:auto}
tbody tr:nth-child(even){background:var(--stripe)}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:6px;vertical-align:-1px}
figure{margin:16px 0 8px}
figure img{display:block;max-width:100%;height:auto;background:#fff;border:1px solid var(--rule);border-radius:6px;
padding:10px;box-sizing:border-box}
figcaption{font-size:13px;margin-top:6px}
.scroll{max-height:640px;overflow:auto;border:1px solid var(--rule);border-radius:6px}
.scroll table{margin:0;width:100%}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
footer{margin-top:3em;font-size:13px;border-top:1px solid var(--rule)}
"""

# click a header: sort by its column (data-v where a cell has one, numbers as numbers), again to reverse
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(t => t.querySelectorAll("th").forEach((th, i) =>
  th.addEventListener("click", () => {
    const up = th.getAttribute("aria-sort") !== "ascending";
    t.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    const key = r => r.cells[i].dataset.v ?? r.cells[i].textContent;
    const rows = [...t.tBodies[0].rows].sort((a, b) => {
      const x = key(a), y = key(b);
      const d = isNaN(x) || isNaN(y) ? x.localeCompare(y, undefined, {numeric: true}) : x - y;
      return up ? d : -d;
    });
    t.tBodies[0].append(...rows);
  })));
"""
