"""Resource budgets for the parsers: what one held file may cost, and what happens when it would cost more.

Every budget is a ceiling on work done for one file. Reaching one is not a failure: the parser records a
`resource_limit` defect (rule `parse.budget`, `ingest/rules/defects.py`) whose detail names the budget and says what
was cut ("stopped after 200000 facts (budget facts_per_file); lines after L40213 are not located"), keeps the
facts found so far, and the ingest goes on. Each budget can be set from the environment as
`VOE_LIMIT_<NAME>` (upper case, e.g. `VOE_LIMIT_FACTS_PER_FILE=100000`), read by pydantic-settings; a value that is
not a positive whole number is an error naming the variable. Sizes are pydantic `ByteSize`s: `64MiB`, `64MB` (powers
of 1000), and a bare `K`, `M` or `G` as before (powers of 1024); counts accept `_` and the same bare suffixes.

| budget (`VOE_LIMIT_...`) | default | what it bounds (per file) | when it is reached |
|---|---|---|---|
| `INFLATED_BYTES_PER_FILE` | 1 GiB | bytes inflated from XLSX members and PDF streams (1) | reading stops there |
| `PDF_DECODED_BYTES` | 128 MiB | bytes decoded from a PDF's streams, all held by pdfminer (2) | the stream is not decoded (3) |
| `PDF_TOKENS` | 1,000,000 | tokens pdfminer reads from a PDF: objects, page tree, content streams (4) | (3) |
| `CHARS_PER_PDF` | 200,000 | characters and graphic objects laid out on a PDF's pages | (3) |
| `TABLE_CELLS_PER_PDF` | 10,000 | PDF table cells read (5) | (3) |
| `PAGES_PER_PDF` | 2,000 | PDF pages parsed | later pages are not parsed |
| `CELLS_PER_WORKBOOK` | 4,000,000 | sheet XML elements of a workbook, CSV fields, NC words (6) | reading stops there |
| `FACTS_PER_FILE` | 200,000 | located facts (cells, lines, words, elements) | later content is not located |
| `XML_ELEMENTS` | 1,000,000 | nodes of an XML document (7) | the rest is not read or validated |
| `XML_DEPTH` | 64 | element nesting in XML (libxml2 itself stops at 256) | deeper elements are not located |
| `XML_ATTRIBUTES` | 1,000 | attributes of one XML element that are located | later attributes are not located |
| `JSON_DEPTH` | 512 | nesting of a NERDm record (8) | the record is refused as input |
| `FIELD_LENGTH` | 32,768 | characters of one fact's text (a cell, field, line, element) | the text is cut to it |
| `JSONLD_BYTES` | 64 MiB | bytes of one JSON-LD file `voe import-package` reads | the crate is refused as input |
| `JSONLD_VALUES` | 2,000,000 | JSON values (objects, arrays, strings, numbers) in one such file | the crate is refused |
| `PARSE_MEMORY` | 1 GiB | address space a parser worker may add to what it had when forked (9) | the worker is stopped |
| `PARSE_CPU_SECONDS` | 30 | CPU seconds parsing one file (SIGXCPU) (9) | the worker is stopped |
| `PARSE_WALL_SECONDS` | 45 | seconds a worker may spend on one file (9) | the worker is killed |

1. XLSX members are streamed (shared strings with expat, sheets with lxml): nothing of them is held beyond what the
   other budgets keep, so this bounds time, not memory. Workbook parts openpyxl reads whole (workbook, styles,
   theme, content types) are charged at their declared size before they are read.
2. Flate, LZW and RunLength output; LZW counts 16 times, CCITT fax input and predictor input 8 times (pdfminer
   decodes them in pure Python). The stream that would pass it is not decoded.
3. Parsing stops at the page that reaches it (its facts and the later pages' are not located; a stream read while
   the file is opened: the file is not parsed). A page whose ruling lines could cross more often than the table
   cells left is not searched for tables but keeps its lines and words.
4. Every token of the file's objects, of a damaged file's fallback scan (pdfminer then reads every object) and of
   each page's content streams (a form XObject each time it is drawn). pdfminer reads 60k-130k tokens per second
   (numbers are the slowest), so this is the budget that bounds a PDF's time: about 15 s. A million tokens is
   about 100 pages of dense text; a longer document is cut with the defect (raise `VOE_LIMIT_PDF_TOKENS`).
5. pdfplumber's table finder costs the square of the ruling-line crossings; each cell's text is read from the
   page's characters near it.
6. A sheet element is a cell (`c`), its value, formula or inline string, or any other element of the sheet;
   empty styled cells count. Cells checked against merged ranges count too. A CSV line counts its commas plus
   one (an upper bound on its fields); the line that reaches the budget is cut after that field. An NC program
   counts its G/M/X/... words; an NC line is read up to `FIELD_LENGTH` characters.
7. Each `<` that does not close a tag: elements, comments, processing instructions. Real AM Bench documents hold
   a few hundred.
9. Limits the operating system enforces on the worker process that parses the file (ingest/payloads/parse_ahead.py;
   every held file is parsed in one, never in the ingest's process), for what the budgets above cannot count: what
   a library allocates or computes per range, string or copy. Past one, the worker is stopped, the file gets a
   `parse_budget_exceeded` defect naming the limit and no facts, that worker alone is replaced and the ingest goes
   on. Where a library's own structure can be bounded first it is: a PDF CMap range is cut to 65,536 codes and a
   font's width range to the CIDs that exist before pdfminer expands them (a `corrupt_file` defect), a workbook's
   shared strings stop at `CELLS_PER_WORKBOOK`. A parse (or a limit's verdict, the wall clock's excepted) is cached
   by the file's sha256, its path, the budgets and the parsers' code (VOE_CACHE_DIR/parsed), so a re-ingest pays
   for no file twice. Measured with tests/ingest/payloads/hostile.py on the 2-core machine: a 24-bit CMap range
   0.2 s, a 2^31 width range 0.1 s, 44.7 million shared strings 11 s at 4 million; the three with a good record
   and amb2025-template in one `voe ingest` about 13 s and under 1.2 GiB.
8. The value of `ingest.sources.nerdm.build.MAX_JSON_DEPTH`, which the NERDm reader enforces; defined here so the two can
   become one.

Why these defaults (the 2-core machine of the benchmarks): every input stays within 60 s and 1.5 GiB, and the real
shared files parse exactly as before the budgets. The largest, `AM-Bench 2022 Measurements.xlsx` (29 MB of sheet
XML, 1.13 million sheet elements, 21,131 facts), streams in about 7 s at 150 MiB; the largest real fact text is
645 characters; 200,000 facts is about 10 times the largest real file. Worst cases measured at the defaults: a
PDF at the token budget about 20 s, at the character budget about 14 s, at the table budget about 9 s (so about
45 s if one file reaches all three); a workbook of 4 million empty cells about 18 s; an XML document at the node
budget about 5 s and 550 MiB; a CSV at the cells budget about 4 s and 760 MiB (a 64 MiB file, the largest
`ingest/payloads/documents.py` parses). `bench/fuzz.py` prints the figures for mutated real files.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Annotated, Any

from annotated_types import Gt
from pydantic import BeforeValidator, ByteSize, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "VOE_LIMIT_"
_BINARY = {"K": "KiB", "M": "MiB", "G": "GiB"}  # a bare K, M or G has meant powers of 1024 since budgets began
_SCALE = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class BudgetError(ValueError):
    """A `VOE_LIMIT_*` variable that is not a positive whole number (or size), or names no budget."""


def _size(raw: Any) -> Any:
    if isinstance(raw, str):
        text = raw.strip().replace("_", "")
        number = text[:-1].replace(".", "", 1)
        if text[-1:].upper() in _BINARY and number.isdigit():
            return text[:-1] + _BINARY[text[-1].upper()]
        return text
    return raw


def _count(raw: Any) -> Any:
    if isinstance(raw, str):
        text = raw.strip().replace("_", "")
        scale = _SCALE.get(text[-1:].upper(), 1)
        text = text[:-1] if scale > 1 else text
        return int(text) * scale if text.lstrip("-").isdigit() else raw
    return raw


# pydantic's ByteSize reads `64MiB`, `64MB` (powers of 1000), `1.5GiB`; a bare suffix keeps its old binary meaning
Size = Annotated[ByteSize, BeforeValidator(_size), Gt(0)]
Count = Annotated[int, BeforeValidator(_count), Gt(0)]


def parse_size(text: str) -> int:
    """A size written as the budgets are (`2GiB`, `64MB`, a bare `512M` in MiB, a number of bytes); ValueError else."""
    from pydantic import TypeAdapter

    try:
        return int(TypeAdapter(Size).validate_python(text))
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from None


class Budgets(BaseSettings):
    """Ceilings on the work one file may cost (the table in this module's docstring); `Budgets()` reads every
    `VOE_LIMIT_<NAME>` set in the environment (pydantic-settings), an empty one counting as unset."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, case_sensitive=False, env_ignore_empty=True,
                                      frozen=True, extra="forbid")

    inflated_bytes_per_file: Size = ByteSize(1 << 30)
    pdf_decoded_bytes: Size = ByteSize(128 << 20)
    cells_per_workbook: Count = 4_000_000
    facts_per_file: Count = 200_000
    pages_per_pdf: Count = 2_000
    pdf_tokens: Count = 1_000_000
    chars_per_pdf: Count = 200_000
    table_cells_per_pdf: Count = 10_000
    xml_elements: Count = 1_000_000
    xml_depth: Count = 64
    xml_attributes: Count = 1_000
    json_depth: Count = 512
    field_length: Count = 32_768
    jsonld_bytes: Size = ByteSize(64 << 20)
    jsonld_values: Count = 2_000_000
    # the operating system's limits on the worker that parses a file (ingest/payloads/parse_ahead.py)
    parse_memory: Size = ByteSize(1 << 30)
    parse_cpu_seconds: Count = 30
    parse_wall_seconds: Count = 45

    @classmethod
    def from_env(cls) -> Budgets:
        """The defaults, overridden by every `VOE_LIMIT_<NAME>` set now; a bad value or an unknown name is a
        BudgetError naming the variable (pydantic's own message would name only the field)."""
        known = {ENV_PREFIX + name.upper() for name in cls.model_fields}
        unknown = sorted(k for k in os.environ if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)
        if unknown:
            raise BudgetError(f"{unknown[0]} is not a budget; known: {', '.join(sorted(known))}")
        try:
            return cls()
        except ValidationError as exc:
            error = exc.errors()[0]
            var = ENV_PREFIX + str(error["loc"][0]).upper()
            raw = next((v for k, v in os.environ.items() if k.upper() == var), error.get("input"))
            if error["type"] == "greater_than":
                raise BudgetError(f"{var}={raw!r} must be positive") from None
            example = "64M" if str(error["loc"][0]) in _SIZES else "100000"
            raise BudgetError(f"{var}={raw!r} is not a whole number (e.g. {var}={example})") from None


_SIZES = frozenset(name for name, field in Budgets.model_fields.items() if field.annotation is ByteSize)


def current() -> Budgets:
    """The budgets in force now: the `VOE_LIMIT_*` variables are read on every call, so a test or a caller that sets
    one sees the change at once; the budgets they make are built once per distinct setting (building them through
    pydantic-settings costs milliseconds, a crate of 10,000 files paid it twice a file)."""
    return _budgets(tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX))))


@functools.lru_cache(maxsize=32)
def _budgets(setting: tuple[tuple[str, str], ...]) -> Budgets:
    del setting  # the cache key: Budgets.from_env reads the same variables
    return Budgets.from_env()


class BudgetExceeded(Exception):
    """Raised inside a parser's inner loop when a budget is reached (a signal, not an error: the parser records a
    `parse.budget` defect and keeps what it found); `name` is the Budgets field."""

    def __init__(self, name: str, limit: int, what: str = "") -> None:
        super().__init__(f"budget {name} ({limit}) reached{': ' + what if what else ''}")
        self.name = name
        self.limit = limit
        self.what = what


class Meter:
    """What one file has used of each budget. `take(name, n)` adds `n` and raises BudgetExceeded when the total
    would pass the budget (the amount that would pass it is not added)."""

    def __init__(self, budgets: Budgets | None = None) -> None:
        self.budgets = budgets or current()
        self.used: dict[str, int] = {}
        self.exceeded: BudgetExceeded | None = None  # the first budget reached, kept even if a library swallowed it

    def limit(self, name: str) -> int:
        return int(getattr(self.budgets, name))

    def room(self, name: str) -> int:
        return self.limit(name) - self.used.get(name, 0)

    def take(self, name: str, n: int = 1, what: str = "") -> None:
        used = self.used.get(name, 0) + n
        if used > self.limit(name):
            exc = BudgetExceeded(name, self.limit(name), what)
            if self.exceeded is None:
                self.exceeded = exc
            raise exc
        self.used[name] = used


def printable(text: object, limit: int = 300) -> str:
    """A message from a library or an exception as one short printable line: raw file bytes a message may echo
    (pdfminer repr()s tokens) become escapes, and the text is cut at `limit` characters."""
    s = str(text)
    out = s.encode("ascii", "backslashreplace").decode("ascii")
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in out[: limit * 4])
    return out if len(out) <= limit else out[: limit - 1] + "…"


LOG = logging.getLogger("voe.ingest")
LOG.addHandler(logging.NullHandler())  # a library logger: silent unless the application configures logging
