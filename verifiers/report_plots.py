"""The plots of `voe report` (matplotlib, the `report` extra), drawn as a paper's figures are: validity with one
point per pass and the clustered interval, validity by task family, the failure codebook as a heat map. Each is
titled, labelled with its values, draws every policy in the colour `policy_colours` gives it, and is written as
PNG and SVG (text kept as text, so it stays editable and searchable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voe.verifiers.metrics import CODEBOOK

# Okabe & Ito's palette, safe for the common colour-vision deficiencies; yellow last, as it is faint on white
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"]
PLOTS = ("validity", "by_family", "codebook")
STYLE: dict[Any, Any] = {"font.size": 9, "axes.titlesize": 11, "axes.titleweight": "bold", "axes.titlelocation": "left",
         "axes.spines.top": False, "axes.spines.right": False, "svg.fonttype": "none", "svg.hashsalt": "voe",
         "figure.facecolor": "white", "axes.facecolor": "white"}
INK, MUTED = "#1b1f24", "#57606a"


def policy_colours(names: list[str]) -> dict[str, str]:
    """Each policy's colour by its place in the report, the same in every plot and table."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def draw(summaries: list[dict[str, Any]], names: list[str], per_pass: list[list[float]], out: Path) -> bool:
    """PLOTS as .png and .svg in `out`; False when matplotlib is not installed. `names` are the policies' labels
    (unique), `per_pass` each policy's validity on every pass."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = policy_colours(names)
    with plt.rc_context(STYLE):
        for name, fig in (("validity", _validity(plt, summaries, names, colours, per_pass)),
                          ("by_family", _by_family(plt, summaries, names, colours)),
                          ("codebook", _codebook(plt, summaries, names, colours))):
            fig.savefig(out / f"{name}.png", dpi=200, bbox_inches="tight")
            fig.savefig(out / f"{name}.svg", bbox_inches="tight", metadata={"Date": None})  # no date: same input, same file
            plt.close(fig)
    return True


def _titled(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    """Title and axis labels carry ids in the SVG, where the tests look for them."""
    ax.set_title(title, pad=10).set_gid("title")
    ax.set_xlabel(xlabel).set_gid("xlabel")
    ax.set_ylabel(ylabel).set_gid("ylabel")


def _validity(plt: Any, summaries: list[dict[str, Any]], names: list[str], colours: dict[str, str],
              per_pass: list[list[float]]) -> Any:
    """A forest plot: one row per policy, hollow dots for the passes (stacked just above the mean, so equal rates
    stay countable and none hides behind it), the mean with its clustered 95% interval, the numbers in a column on
    the right."""
    import numpy as np
    from matplotlib.lines import Line2D

    n = len(names)
    fig, ax = plt.subplots(figsize=(7.5, 1.5 + 0.5 * n))
    for i, (s, name) in enumerate(zip(summaries, names, strict=True)):
        y = n - 1 - i  # the first policy on top, as in the tables
        rate = s["evidence_grounded_valid"]
        mean, (lo, hi) = rate["mean"], rate["ci95"]
        points = per_pass[i]
        spread = np.linspace(0.16, 0.36, len(points)) if len(points) > 1 else np.full(len(points), 0.26)
        ax.scatter(points, y + spread, s=24, facecolors="none", edgecolors=colours[name], linewidths=1.2,
                   zorder=3, gid=f"policy{i}-passes")
        ax.errorbar([mean], [y], xerr=[[mean - lo], [hi - mean]], fmt="D", color=colours[name], ms=7, mec=INK,
                    mew=0.8, elinewidth=2, capsize=5, capthick=2, zorder=4, gid=f"policy{i}-mean")
        ax.text(1.03, y, f"{mean:.3f}  [{lo:.3f}, {hi:.3f}]", transform=ax.get_yaxis_transform(), va="center",
                fontsize=8.5, color=INK, gid=f"policy{i}-value")
    ax.text(1.03, n - 0.45, "mean  [clustered 95% CI]", transform=ax.get_yaxis_transform(), va="bottom",
            fontsize=8, color=MUTED)
    ax.set_yticks(range(n), list(reversed(names)))
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(-0.04, 1.04)  # a rate of 0 or 1 sits inside the frame, not on its edge
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.grid(axis="x", color="#e1e4e8", lw=0.8, zorder=0)
    ax.spines["left"].set_visible(False)
    ax.tick_params(axis="y", length=0)
    _titled(ax, "Evidence-grounded validity", "evidence-grounded valid (share of trajectories)", "")
    ax.legend(handles=[Line2D([], [], ls="", marker="o", mfc="none", mec=MUTED, label="one pass"),
                       Line2D([], [], color=MUTED, marker="D", mec=INK, lw=2, label="mean, clustered 95% CI")],
              loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, frameon=False, fontsize=8)
    return fig


def _by_family(plt: Any, summaries: list[dict[str, Any]], names: list[str], colours: dict[str, str]) -> Any:
    """Grouped bars with the clustered interval; every bar is labelled, and a zero is a coloured tick on the
    baseline, so a policy that scored nothing is seen to have scored nothing rather than to be missing."""
    families = sorted({f for s in summaries for f in s["by_family"]})
    n = len(names)
    width = 0.8 / max(1, n)
    fig, ax = plt.subplots(figsize=(max(7.5, 1.1 + len(families) * (0.35 + 0.3 * n)), 4.2))
    for i, (s, name) in enumerate(zip(summaries, names, strict=True)):
        xs = [j - 0.4 + width * (i + 0.5) for j, f in enumerate(families) if f in s["by_family"]]
        rates = [s["by_family"][f]["evidence_grounded_valid"] for f in families if f in s["by_family"]]
        means = [r["mean"] for r in rates]
        ax.bar(xs, means, width * 0.9, color=colours[name], label=name, zorder=2, gid=f"policy{i}-bars")
        ax.errorbar(xs, means, yerr=[[m - r["ci95"][0] for m, r in zip(means, rates, strict=True)],
                                     [r["ci95"][1] - m for m, r in zip(means, rates, strict=True)]],
                    fmt="none", ecolor=INK, elinewidth=0.8, capsize=2, zorder=3)
        zeros = [x for x, m in zip(xs, means, strict=True) if m == 0]
        if zeros:
            ax.plot(zeros, [0] * len(zeros), ls="", marker="_", ms=max(6.0, 300 * width / max(4, len(families))),
                    mew=3, color=colours[name], zorder=4, clip_on=False, gid=f"policy{i}-zero")
        for x, m, r in zip(xs, means, rates, strict=True):
            ax.text(x, max(m, r["ci95"][1]) + 0.02, f"{m:.2f}", ha="center", va="bottom", fontsize=7,
                    rotation=90 if n > 3 else 0, color=INK)
    tasks = {f: max(s["by_family"][f]["tasks"] for s in summaries if f in s["by_family"]) for f in families}
    ax.set_xticks(range(len(families)), [f"{f}\n({tasks[f]} tasks)" for f in families])
    ax.tick_params(axis="x", length=0)
    ax.set_ylim(0, 1.18)  # room for the labels above a full bar
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.grid(axis="y", color="#e1e4e8", lw=0.8, zorder=0)
    _titled(ax, "Evidence-grounded validity by task family (clustered 95% CI)", "task family",
            "evidence-grounded valid")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="policy")
    return fig


def _codebook(plt: Any, summaries: list[dict[str, Any]], names: list[str], colours: dict[str, str]) -> Any:
    """Policies x codebook labels: the cell's shade is the share of the policy's trajectories, its text the
    count; the colour strip on the left ties each row to the policy's colour elsewhere."""
    from matplotlib.patches import Rectangle

    counts = [[s["codebook"].get(label, 0) for label in CODEBOOK] for s in summaries]
    shares = [[c / max(1, sum(row)) for c in row] for row in counts]
    fig, ax = plt.subplots(figsize=(8.5, 1.9 + 0.42 * len(names)))
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for i, row in enumerate(counts):
        ax.add_patch(Rectangle((-0.5 - 0.18, i - 0.5), 0.14, 1, color=colours[names[i]], clip_on=False,
                               gid=f"policy{i}-strip"))
        for j, c in enumerate(row):
            ax.text(j, i, str(c), ha="center", va="center", fontsize=8, fontweight="bold" if c else "normal",
                    color="white" if shares[i][j] > 0.55 else INK if c else "#a0a7b0", gid=f"cell-{i}-{j}")
    ax.set_xticks(range(len(CODEBOOK)), CODEBOOK, rotation=35, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(len(names)), names)
    ax.tick_params(axis="y", pad=12, length=0)
    ax.tick_params(axis="x", length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    _titled(ax, "Failure codebook: trajectories per label", "codebook label", "")
    bar = fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02)
    bar.set_label("share of the policy's trajectories")
    return fig
