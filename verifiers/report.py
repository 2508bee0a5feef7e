"""`voe report`: the headline table, per-family breakdown, codebook distribution and plots for runs."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from voe.verifiers.metrics import CODEBOOK


def _fmt(rate: dict[str, Any]) -> str:
    """The headline: the mean with its clustered interval and how many clusters it rests on."""
    lo, hi = rate["ci95"]
    return f"{rate['mean']:.3f} [{lo:.3f}, {hi:.3f}] ({rate.get('clusters', 0)} clusters)"


def _passes(rate: dict[str, Any]) -> str:
    """The per-pass interval beside it; a zero-width one says it is the same rate every pass, not a certainty."""
    lo, hi = rate["ci95_passes"]
    if "zero width" in rate.get("passes_method", ""):
        return "zero width: same rate every pass"
    return f"[{lo:.3f}, {hi:.3f}]" + (" (Wilson, one pass)" if rate.get("passes_method") == "wilson" else "")


def write_report(summaries: list[dict[str, Any]], out: Path, paired: list[dict[str, Any]] | None = None) -> Path:
    """The report of scored runs; `paired` holds each run's paired difference of validity against a chosen run
    (`voe report --against`), in the order of `summaries`. The plots need matplotlib (the `report` extra); without
    it the report holds the tables and says how to get the plots."""
    out.mkdir(parents=True, exist_ok=True)
    head = ["policy", "tasks x passes", "evidence-grounded valid (clustered 95% CI)", "per-pass 95% CI", "action valid",
            "useful precision", "evidence regret", "cost score", "over-submit"]
    rows = [[s["policy"], f"{s['tasks']} x {s['passes']}", _fmt(s["evidence_grounded_valid"]),
             _passes(s["evidence_grounded_valid"]),
             f"{s['action_valid']['mean']:.3f}", f"{s['useful_precision']:.3f}", f"{s['evidence_regret']:.2f}",
             f"{s['cost_score']:.3f}", f"{s['over_submit']:.3f}"] for s in summaries]
    families = sorted({f for s in summaries for f in s["by_family"]})
    fam_head = ["family", *[s["policy"] for s in summaries]]
    fam_rows = [[f, *[(_fmt(s["by_family"][f]["evidence_grounded_valid"]) if f in s["by_family"] else "-")
                      for s in summaries]] for f in families]
    code_head = ["label", *[s["policy"] for s in summaries]]
    code_rows = [[c, *[str(s["codebook"].get(c, 0)) for s in summaries]] for c in CODEBOOK]
    usage_head = ["policy", "model calls", "tokens in", "tokens out", "cost (USD)"]
    usage_rows = [[s["policy"], *[("-" if s.get("usage", {}).get(k) is None else str(s["usage"][k]))
                                  for k in ("calls", "tokens_in", "tokens_out", "cost")]] for s in summaries]
    pair_head = ["policy", "against", "tasks", "mean difference (95% CI)", "only this valid", "only the other valid"]
    pair_rows = [[s["policy"], p["against"], str(p["tasks"]),
                  f"{p.get('mean_difference', 0.0):+.3f} [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}]" if p["tasks"] else "-",
                  str(p.get("a_only_valid", 0)), str(p.get("b_only_valid", 0))]
                 for s, p in zip(summaries, paired or [], strict=False)]

    def md(h: list[str], r: list[list[str]]) -> str:
        return "\n".join(["| " + " | ".join(h) + " |", "|" + "---|" * len(h)] + ["| " + " | ".join(x) + " |" for x in r])

    drawn = _plots(summaries, families, out)
    images_md = ("![validity](validity.png)\n\n![by family](by_family.png)" if drawn else
                 f"Plots not drawn: {NO_PLOTS}.")
    images_html = ("<p><img src=validity.png> <img src=by_family.png></p>" if drawn else
                   f"<p>Plots not drawn: {html.escape(NO_PLOTS)}.</p>")

    text = "\n\n".join([
        "# voe run report", "## Headline", md(head, rows), "## By family (evidence-grounded valid, 95% CI)",
        md(fam_head, fam_rows), "## Failure codebook (trajectories per label)", md(code_head, code_rows),
        "## Model usage", md(usage_head, usage_rows),
        *(["## Paired difference of validity (per task, mean over passes)", md(pair_head, pair_rows)] if paired else []),
        images_md,
        "Definitions: `verifiers/metrics.py`. Intervals: the headline is clustered (cluster-robust standard error, "
        "exact t quantile) over groups of tasks linked by a workflow or a gold fact: tasks that share items, "
        "decisions or the fact their answer rests on are not independent. Beside it, the Student-t over passes "
        "(Wilson for one pass); a policy that scores the same on every pass has a zero-width per-pass interval, "
        "which says the policy is deterministic, not that the rate is certain.", ""])
    (out / "report.md").write_text(text)

    def table(h: list[str], r: list[list[str]]) -> str:
        cells = "".join(f"<th>{html.escape(x)}</th>" for x in h)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in r)
        return f"<table border=1 cellpadding=4><tr>{cells}</tr>{body}</table>"

    (out / "report.html").write_text(
        "<!doctype html><meta charset=utf-8><title>voe run report</title><h1>voe run report</h1>"
        f"<h2>Headline</h2>{table(head, rows)}<h2>By family</h2>{table(fam_head, fam_rows)}"
        f"<h2>Failure codebook</h2>{table(code_head, code_rows)}<h2>Model usage</h2>{table(usage_head, usage_rows)}"
        + (f"<h2>Paired difference of validity</h2>{table(pair_head, pair_rows)}" if paired else "") +
        images_html)
    (out / "summaries.json").write_text(json.dumps(summaries, indent=2) + "\n")
    return out / "report.md"


NO_PLOTS = "matplotlib is not installed (pip install 'voe-evidence[report]')"


def _plots(summaries: list[dict[str, Any]], families: list[str], out: Path) -> bool:
    """validity.png/.svg and by_family.png; False when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = [s["policy"] for s in summaries]
    means = [s["evidence_grounded_valid"]["mean"] for s in summaries]
    errs = [[m - s["evidence_grounded_valid"]["ci95"][0] for m, s in zip(means, summaries, strict=True)],
            [s["evidence_grounded_valid"]["ci95"][1] - m for m, s in zip(means, summaries, strict=True)]]
    ax.bar(names, means, yerr=errs, capsize=4, color="#4a7ab5")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("evidence-grounded valid")
    ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(out / "validity.png", dpi=120)
    fig.savefig(out / "validity.svg")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9.5, 4))
    width = 0.8 / max(1, len(summaries))
    for i, s in enumerate(summaries):
        vals = [s["by_family"].get(f, {}).get("evidence_grounded_valid", {}).get("mean", 0.0) for f in families]
        ax.bar([j + i * width for j in range(len(families))], vals, width=width, label=s["policy"])
    ax.set_xticks([j + width * (len(summaries) - 1) / 2 for j in range(len(families))], families, rotation=20)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("evidence-grounded valid")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: bars reach 1.0
    fig.tight_layout()
    fig.savefig(out / "by_family.png", dpi=120)
    plt.close(fig)
    return True
