"""Dispatch a held file to its parser by content and turn the result into located facts and defects."""

from __future__ import annotations

import warnings
from pathlib import Path, PurePosixPath
from typing import Any

from voe.ingest.payloads.limits import LOG, BudgetExceeded, Budgets, current, printable
from voe.ingest.payloads.parsers import registry
from voe.ingest.payloads.parsers.model import Fact, FileDefect, Parsed, Role
from voe.ingest.payloads.parsers.sniff import sniff

HEAD_BYTES = 8192
# Exceptions that say the parser's own code went wrong, not that the bytes are bad: an input condition is a
# ValueError, a library's own error, an OSError... A parser that meets bad bytes must say so in those terms.
PARSER_BUGS = (IndexError, KeyError, TypeError, AttributeError, AssertionError, NameError, ZeroDivisionError)
MAX_PARSE_BYTES = 64 << 20  # larger payloads are hashed but not parsed (their facts would swamp the graph)


def parse_file(path: Path, relpath: str) -> Parsed | None:
    """Parse by what the bytes are. None for formats with no facts to extract (checksums, zips, JSON,
    binaries) or files too large to parse. Parsing is bounded by the budgets of `ingest/payloads/limits.py` (a bad
    `VOE_LIMIT_*` value raises BudgetError here, before any file is read); what the parsing libraries warn
    about goes to the `voe.ingest` logger, never to stderr."""
    budgets = current()
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    try:
        fmt = sniff(path, head)
    except Exception as exc:  # noqa: BLE001 - sniffing reads a zip directory too; damaged bytes are binary
        LOG.warning("%s: cannot tell the format (%s: %s)", relpath, type(exc).__name__, printable(exc))
        fmt = "binary"
    ext = PurePosixPath(relpath).suffix.lower()
    expected = registry.expected_format(ext)
    mismatch = None
    if expected and expected != fmt:
        mismatch = FileDefect("format.mismatch",
                              f"{relpath}: extension {ext} says {expected}, the bytes are {fmt}; parsed as {fmt}")
    if size > MAX_PARSE_BYTES:
        return None
    try:
        with _WarningsLogged(relpath):
            parsed = _dispatch(path, fmt)
    except MemoryError:  # the worker's address-space limit (ingest/payloads/parse_ahead.py): the same defect
        parsed = Parsed(format=fmt, role=Role.METADATA)
        parsed.defects.append(FileDefect(
            "parse.os_limit", f"the {fmt} parser passed the memory limit of "
                              f"{budgets.parse_memory.human_readable()} (VOE_LIMIT_PARSE_MEMORY) and was stopped; no fact "
                              "of the file is located"))
    except BudgetExceeded as exc:  # a parser that let its signal through: the budget still holds
        parsed = Parsed(format=fmt, role=Role.METADATA)
        parsed.defects.append(FileDefect("parse.budget", f"{relpath}: the {fmt} parser stopped: {exc}"))
    except PARSER_BUGS as exc:  # a bug of ours, not an input condition: said as such, and counted by the fuzz
        LOG.error("%s: the %s parser hit a bug (%s: %s); please report it", relpath, fmt, type(exc).__name__,
                  printable(exc), exc_info=True)
        parsed = Parsed(format=fmt, role=Role.METADATA)
        parsed.summary["parser_bug"] = f"{type(exc).__name__}: {printable(exc)}"
        parsed.defects.append(FileDefect(
            "file.parse", f"{relpath}: the {fmt} parser hit a bug in voe ({type(exc).__name__}: {printable(exc)})"))
    except Exception as exc:  # noqa: BLE001 - an input a library cannot read must not stop the ingest
        parsed = Parsed(format=fmt, role=Role.METADATA)
        parsed.defects.append(FileDefect(
            "file.parse", f"{relpath}: the {fmt} parser failed ({type(exc).__name__}: {printable(exc)})"))
    if parsed is not None:
        _hold_to_budgets(parsed, budgets)
    if parsed is None:
        if mismatch is not None:
            parsed = Parsed(format=fmt, role=Role.METADATA)
        else:
            return None
    if mismatch is not None:
        parsed.defects.insert(0, mismatch)
    return parsed


class _WarningsLogged:
    """Python warnings raised while one file is parsed (openpyxl's "Data Validation extension is not supported",
    "Cell ... is marked as a date but ...") go to the `voe.ingest` logger: the first few as they come, then a count."""

    SHOWN = 20

    def __init__(self, relpath: str) -> None:
        self.relpath = relpath
        self.count = 0
        self._ctx = warnings.catch_warnings()

    def __enter__(self) -> None:
        self._ctx.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show

    def _show(self, message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        self.count += 1
        if self.count <= self.SHOWN:
            LOG.warning("%s: %s: %s", self.relpath, category.__name__, printable(message))

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)
        if self.count > self.SHOWN:
            LOG.warning("%s: %d more warnings", self.relpath, self.count - self.SHOWN)


def _hold_to_budgets(parsed: Parsed, budgets: Budgets) -> None:
    """The budgets every parser keeps, checked once more on its result: at most facts_per_file facts, and no fact
    text longer than field_length characters (the text is cut; one defect names the first and counts the rest)."""
    limit = budgets.facts_per_file
    if len(parsed.facts) > limit:
        last = parsed.facts[limit - 1].locator
        del parsed.facts[limit:]
        parsed.defects.append(FileDefect(
            "parse.budget", f"stopped after {limit} facts (budget facts_per_file); facts after {last} are not located"))
    width = budgets.field_length
    long = [f for f in parsed.facts if len(f.text) > width]
    if long:
        _truncate(parsed, long, width)
    # one budget defect per place (a defect's id is its kind and place): a second one there joins the first
    first: dict[str | None, FileDefect] = {}
    kept = []
    for d in parsed.defects:
        if d.rule == "parse.budget" and d.locator in first:
            first[d.locator].detail += f"; {d.detail}"
            continue
        if d.rule == "parse.budget":
            first[d.locator] = d
        kept.append(d)
    parsed.defects[:] = kept


def _truncate(parsed: Parsed, long: list[Fact], width: int) -> None:
    first, size = long[0].locator, len(long[0].text)
    for f in long:
        f.text = f.text[:width]
        if isinstance(f.value, str) and len(f.value) > width:
            f.value = f.value[:width]
    more = f"; {len(long) - 1} more fact(s) are truncated the same way" if len(long) > 1 else ""
    parsed.defects.append(FileDefect(
        "parse.budget", f"{first} holds {size} characters; its first {width} are kept (budget field_length){more}", first))


def _dispatch(path: Path, fmt: str) -> Parsed | None:
    spec = registry.get(fmt)
    return spec.parse(path) if spec is not None and spec.parse is not None else None
