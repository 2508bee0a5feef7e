"""`voe report` from score summaries (no database): with matplotlib the plots, without it (the `report` extra
not installed) every table and a note saying how to get the plots. The report is read as a reader would: one
self-contained HTML file, every plot titled and labelled, a policy in one colour everywhere, a zero that shows,
the codebook's heat map and the per-task table matching the scores; and, in headless Chromium, in light and dark."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.verifiers.test_metrics import _score
from voe.artifacts.scores import TrajectoryScore
from voe.verifiers.metrics import CODEBOOK, summarize
from voe.verifiers.report import NO_PLOTS, About, policy_names, write_report
from voe.verifiers.report_plots import PALETTE, PLOTS, policy_colours

PASSES = 3
SVG = "{http://www.w3.org/2000/svg}"


def _runs() -> list[tuple[str, list[TrajectoryScore]]]:
    """reference (always valid), random (valid on a few tasks, more on some passes than others) and refuse_all
    (never valid: the zero every plot must show)."""
    def run(valid: Any, family: Any = lambda t: "source_integrity") -> list[TrajectoryScore]:
        return [_score(f"t{t}", valid(t, p), cluster=f"w{t % 2}", family=family(t), pass_index=p)
                for t in range(4) for p in range(PASSES)]

    refuse = [s.model_copy(update={"label": "over_abstain"}) for s in run(lambda t, p: False)]
    return [("reference", run(lambda t, p: True)),
            ("random", run(lambda t, p: t == 0 or (t == 1 and p == 2), lambda t: "missing_evidence" if t % 2 else
                           "source_integrity")),
            ("refuse_all", refuse)]


def _summaries() -> list[dict[str, Any]]:
    return [summarize(scores, name, PASSES) for name, scores in _runs()]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_report(_summaries(), out, scores=[s for _, s in _runs()], info=_ABOUT)
    return out


# the tasks as a reader knows them; t3 is left out: the report names it by id (its package not at hand)
_ABOUT = About("9.9.9", "2026-01-02T03:04:05Z", {f"t{t}": (f"Should packet {t} be submitted?", f"workflow {t % 2}")
                                                 for t in range(3)})


def _svg(report: Path, plot: str) -> ET.Element:
    return ET.parse(report / f"{plot}.svg").getroot()


def _by_id(root: ET.Element, prefix: str) -> dict[str, ET.Element]:
    return {e.get("id", ""): e for e in root.iter() if e.get("id", "").startswith(prefix)}


def _text(element: ET.Element) -> str:
    return "".join(element.itertext()).strip()


def _colours(element: ET.Element) -> set[str]:
    """The fill and stroke colours drawn under `element` (matplotlib writes them in style attributes)."""
    found = set()
    for e in element.iter():
        found |= {c.upper() for c in re.findall(r"(?:fill|stroke): (#[0-9a-fA-F]{6})", e.get("style", ""))}
    return found


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts, and the sortable one's cells' data-v."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.sortable: list[list[list[str]]] = []
        self.keys: list[str] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
            if ("class", "sortable") in attrs:
                self.sortable.append(self.tables[-1])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []
            self.keys += [v or "" for k, v in attrs if k == "data-v"]

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None


def test_the_report_draws_its_plots(report: Path) -> None:
    text = (report / "report.md").read_text()
    assert "| reference | 4 x 3 |" in text and "![validity](validity.png)" in text and "![codebook](codebook.png)" in text
    for name in PLOTS:
        assert (report / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
        assert (report / f"{name}.svg").read_bytes()[:5] == b"<?xml", name
    assert NO_PLOTS not in text


def test_the_html_is_self_contained(report: Path) -> None:
    page = (report / "report.html").read_text()
    links = re.findall(r"""\b(?:src|href)\s*=\s*['"]?([^'"\s>]+)""", page)
    assert links and all(link.startswith("data:") for link in links), [link[:40] for link in links]
    assert len(re.findall(r"<img src='data:image/png;base64,", page)) == len(PLOTS)
    without_data = re.sub(r"data:[^'\"\s>]+", "", page)
    assert not re.search(r"https?://|<link\b|@import|url\(", without_data)  # no fetch: no CDN, no web font
    assert "<style>" in page and "prefers-color-scheme:dark" in page


def test_every_plot_has_a_title_and_labelled_axes(report: Path) -> None:
    for plot in PLOTS:
        ids = _by_id(_svg(report, plot), "")
        assert _text(ids["title"]) and _text(ids["xlabel"]), plot
    assert _text(_by_id(_svg(report, "by_family"), "ylabel")["ylabel"]) == "evidence-grounded valid"


def test_the_values_are_written_on_the_plots(report: Path) -> None:
    summaries = _summaries()
    values = _by_id(_svg(report, "validity"), "policy")
    for i, s in enumerate(summaries):
        rate = s["evidence_grounded_valid"]
        assert _text(values[f"policy{i}-value"]) == f"{rate['mean']:.3f}  [{rate['ci95'][0]:.3f}, {rate['ci95'][1]:.3f}]"
    bars = [_text(e) for e in _svg(report, "by_family").iter(f"{SVG}text")]
    for s in summaries:
        for family in s["by_family"].values():
            assert f"{family['evidence_grounded_valid']['mean']:.2f}" in bars


def test_validity_draws_one_point_per_pass(report: Path) -> None:
    summaries = _summaries()
    passes = _by_id(_svg(report, "validity"), "policy")
    for i, s in enumerate(summaries):
        assert len(list(passes[f"policy{i}-passes"].iter(f"{SVG}use"))) == PASSES  # one marker per pass
        assert len(s["evidence_grounded_valid"]["per_pass"]) == PASSES
    assert summaries[1]["evidence_grounded_valid"]["per_pass"] == [0.25, 0.25, 0.5]


def test_one_colour_per_policy_across_plots(report: Path) -> None:
    names = policy_names(_summaries())
    colours = policy_colours(names)
    assert len(set(colours.values())) == len(names) and list(colours.values()) == PALETTE[:len(names)]
    for plot in PLOTS:
        drawn = _by_id(_svg(report, plot), "policy")
        for i, name in enumerate(names):
            seen = set().union(*[_colours(e) for key, e in drawn.items() if key.startswith(f"policy{i}-")])
            assert colours[name] in seen, (plot, name, seen)
            assert not seen & {c for other, c in colours.items() if other != name}, (plot, name, seen)
    page = (report / "report.html").read_text()
    for name in names:  # the tables' swatches too
        assert f'<span class=swatch style="background:{colours[name]}"></span>{name}' in page


def test_runs_of_one_policy_get_a_colour_each(tmp_path: Path) -> None:
    summaries = _summaries()[:2] + _summaries()[1:2]
    assert policy_names(summaries) == ["reference", "random", "random (2)"]
    assert len(set(policy_colours(policy_names(summaries)).values())) == 3


def test_a_zero_is_visible(report: Path) -> None:
    """refuse_all scores 0 everywhere: its mean, passes and bars are drawn, not lost on the axis."""
    assert _summaries()[2]["evidence_grounded_valid"]["mean"] == 0
    validity = _by_id(_svg(report, "validity"), "policy2-")
    assert {"policy2-passes", "policy2-mean", "policy2-value"} <= set(validity)
    assert _text(validity["policy2-value"]).startswith("0.000")
    family = _by_id(_svg(report, "by_family"), "policy2-")
    assert PALETTE[2] in _colours(family["policy2-zero"])  # a coloured tick on the baseline, where the bar is empty
    import matplotlib.pyplot as plt

    from voe.verifiers.report_plots import _validity

    fig = _validity(plt, _summaries(), policy_names(_summaries()), policy_colours(policy_names(_summaries())),
                    [[0.0] * PASSES] * 3)
    assert fig.axes[0].get_xlim()[0] < 0 < 1 < fig.axes[0].get_xlim()[1]  # 0 and 1 inside the frame, not on it
    plt.close(fig)


def test_the_heat_map_cells_are_the_codebook_counts(report: Path) -> None:
    cells = _by_id(_svg(report, "codebook"), "cell-")
    assert len(cells) == len(_summaries()) * len(CODEBOOK)
    for i, s in enumerate(_summaries()):
        for j, label in enumerate(CODEBOOK):
            assert _text(cells[f"cell-{i}-{j}"]) == str(s["codebook"].get(label, 0)), (s["policy"], label)
    assert _text(cells[f"cell-2-{CODEBOOK.index('over_abstain')}"]) == str(4 * PASSES)


def test_the_per_task_table_rows_are_the_scores(report: Path) -> None:
    tables = _Tables()
    tables.feed((report / "report.html").read_text())
    (table,) = tables.sortable
    head, rows = table[0], table[1:]
    assert head == ["question", "workflow", "policy", "valid passes", "cost score", "codebook label"]
    expected = []
    for name, scores in _runs():
        for task in sorted({s.task_id for s in scores}):
            mine = [s for s in scores if s.task_id == task]
            valid = sum(s.valid for s in mine)
            labels = sorted({s.label for s in mine})
            question, workflow = _ABOUT.questions.get(task, (task, ""))
            expected.append([question, workflow, name, f"{valid}/{PASSES}",
                             f"{sum(s.cost_score for s in mine) / PASSES:.3f}", labels])
    key = sorted(expected, key=lambda r: (r[2] != "reference", r[2] != "random", r[1], r[0]))
    got = [[*r[:5], sorted(x.split(" \u00d7")[0] for x in r[5].split(", "))] for r in rows]
    assert sorted(map(str, got)) == sorted(map(str, key))
    assert "Should packet 1 be submitted?" in [r[0] for r in rows if r[2] == "random" and r[3] == "1/3"]
    # a task's family decides its answer: the per-task table never shows it, and no curator's section by default
    families = {s.family for _, run in _runs() for s in run}
    assert not any(c in families for r in rows for c in r)
    assert "Curator" not in (report / "report.html").read_text()


def test_the_report_states_its_package_version_date_and_definitions(report: Path) -> None:
    for name in ("report.md", "report.html"):
        text = (report / name).read_text()
        assert "voe 9.9.9" in text and "written 2026-01-02T03:04:05Z" in text, name
        assert "Cost score: max(0, valid - 0.5 x regret / horizon)" in text, name
        assert "Unplayed: a task and pass the run never played" in text, name


def test_a_curators_report_adds_each_tasks_family_in_its_own_section(tmp_path: Path) -> None:
    info = About(_ABOUT.version, _ABOUT.written, _ABOUT.questions, curator=True)
    write_report(_summaries(), tmp_path, scores=[s for _, s in _runs()], info=info)
    text = (tmp_path / "report.md").read_text()
    section = text.split("## Curator's section", 1)[1].split("\n## ", 1)[0]
    assert "| t1 | Should packet 1 be submitted? | source_integrity |" in section
    assert "| t3 | t3 | source_integrity |" in section


def test_a_family_of_one_task_and_an_all_alike_rate_are_not_shown_as_certain(tmp_path: Path) -> None:
    scores = [_score("t0", True, family="packet_escalation", cluster="w0"),
              *[_score(f"t{t}", False, cluster=f"w{t}") for t in range(1, 6)]]
    write_report([summarize(scores, "p", 1)], tmp_path, scores=[scores], info=_ABOUT)
    text = (tmp_path / "report.md").read_text()
    assert "1.000 (one task: no interval)" in text  # packet_escalation: one task
    line = next(x for x in text.splitlines() if x.startswith("| source_integrity"))
    assert "0.000 [0.000, 0.522] (5 clusters)" in line  # 0 of 5, exact over 5 clusters


def test_each_runs_audit_is_in_the_report_and_a_failed_one_is_marked(tmp_path: Path) -> None:
    """The audit line `voe score` printed, per run, in Markdown and HTML; a run whose audit failed is called out at
    the top and its line stands out; a summary scored before runs audited themselves says so."""
    summaries = _summaries()
    passed = ("audit passed (36 messages checked; 0 parse errors, 2 off-menu, 0 duplicate requests, 0 duplicate "
              "loops, 0 horizons exhausted)")
    failed = ("audit FAILED: 3 message(s) carry verifier-only terms (36 messages checked; 0 parse errors, 0 off-menu, "
              "0 duplicate requests, 0 duplicate loops, 0 horizons exhausted)")
    summaries[0]["audit"] = {"passed": True, "leaks": 0, "line": passed}
    summaries[1]["audit"] = {"passed": False, "leaks": 3, "line": failed}
    write_report(summaries, tmp_path, scores=[s for _, s in _runs()], info=_ABOUT)

    md = (tmp_path / "report.md").read_text()
    section = md.split("## Run audit", 1)[1].split("\n## ", 1)[0]
    assert f"| reference | {passed} |" in section and f"| random | **{failed}** |" in section
    assert "| refuse_all | not recorded (scored by a voe before runs audited themselves) |" in section
    head = md.split("\n## ", 1)[0]  # before the first table
    assert "> **Audit FAILED for random: 3 message(s)" in head and "reference" not in head

    page = (tmp_path / "report.html").read_text()
    assert page.index("<p class=failed role=alert><strong>Audit FAILED for random") < page.index("<h2>Headline")
    assert f"<strong class=failed>{failed}</strong>" in page and f"<td>{passed}</td>" in page
    parser = _Tables()
    parser.feed(page)
    audit_table = next(t for t in parser.tables if t[0] == ["policy", "audit"])
    assert [row[1] for row in audit_table[1:]] == [passed, failed, "not recorded (scored by a voe before runs "
                                                                     "audited themselves)"]


def test_a_summary_without_per_pass_rates_takes_them_from_the_scores(tmp_path: Path) -> None:
    """summary.json written before Rate.per_pass: the points come from scores.jsonl."""
    summaries = _summaries()
    for s in summaries:
        del s["evidence_grounded_valid"]["per_pass"]
    write_report(summaries, tmp_path, scores=[s for _, s in _runs()])
    passes = _by_id(_svg(tmp_path, "validity"), "policy1-passes")["policy1-passes"]
    assert len(list(passes.iter(f"{SVG}use"))) == PASSES


def test_without_matplotlib_the_report_keeps_its_tables_and_says_why_no_plots(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    path = write_report(_summaries(), tmp_path, scores=[s for _, s in _runs()])
    text = path.read_text()
    assert "| reference | 4 x 3 |" in text and "## By family" in text and "## Failure codebook" in text
    assert f"Plots not drawn: {NO_PLOTS}." in text and "voe-evidence[report]" in text
    page = (tmp_path / "report.html").read_text()
    assert "Plots not drawn" in page and "<img" not in page and "class=sortable" in page
    assert not (tmp_path / "validity.png").exists()


# --- in a browser -------------------------------------------------------------------------------------------------

def _luminance(css: str) -> float:
    """WCAG relative luminance of an rgb()/rgba() colour."""
    channels = [int(x) / 255 for x in re.findall(r"\d+", css)[:3]]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.timeout(120)
def test_the_report_in_a_browser_light_and_dark(report: Path, chromium: Any, tmp_path: Path) -> None:
    """Screenshots in light and dark (saved; printed with -s): the plots render, a header click sorts the
    per-task table, and the text stands out from its ground in both schemes."""
    column = 3  # valid passes: the ones sort before the threes
    requests: list[str] = []  # every URL the page asks for, across both schemes
    for scheme in ("light", "dark"):
        context = chromium.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto((report / "report.html").as_uri())
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
        assert len(widths) == len(PLOTS) and all(w > 0 for w in widths), widths
        assert all(u.startswith(("file:", "data:")) for u in requests), requests
        body = page.eval_on_selector("body", "b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]")
        assert _contrast(*body) >= 7, (scheme, body)  # WCAG AAA for body text
        cell = page.eval_on_selector("table.sortable td", "td => getComputedStyle(td).color")
        assert _contrast(cell, body[1]) >= 7, (scheme, cell)
        if scheme == "dark":
            assert _luminance(body[1]) < 0.05 < 0.8 < _luminance(body[0]), body
        order = f"table.sortable tbody tr td:nth-child({column + 1})"
        before = page.eval_on_selector_all(order, "tds => tds.map(td => td.textContent)")
        page.click(f"table.sortable th:nth-child({column + 1})")
        after = page.eval_on_selector_all(order, "tds => tds.map(td => td.textContent)")
        assert after != before and after == sorted(before, key=lambda v: int(v.split("/")[0])), after
        page.click(f"table.sortable th:nth-child({column + 1})")
        again = page.eval_on_selector_all(order, "tds => tds.map(td => td.textContent)")
        assert again == sorted(before, key=lambda v: int(v.split("/")[0]), reverse=True), again
        page.screenshot(path=str(tmp_path / f"report-{scheme}.png"), full_page=True)
        context.close()
    print(f"screenshots: {tmp_path}")
