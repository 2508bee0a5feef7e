"""Drawing helpers for the PDFs the parser tests and bench/fuzz.py build with reportlab."""

from __future__ import annotations

from typing import Any

TABLE = (("specimen", "cycles"), ("S01", "1200000"), ("S02", "runout"))


def ruled_table(c: Any, rows: tuple[tuple[str, ...], ...] = TABLE, xs: tuple[int, ...] = (72, 222, 372),
                top: int = 700, row_height: int = 20) -> None:
    """A table drawn with ruling lines (what pdfplumber's table finder reads) on reportlab canvas `c`."""
    ys = [top - row_height * r for r in range(len(rows) + 1)]
    for y in ys:
        c.line(xs[0], y, xs[-1], y)
    for x in xs:
        c.line(x, ys[0], x, ys[-1])
    for r, row in enumerate(rows):
        for k, cell in enumerate(row):
            c.drawString(xs[k] + 5, ys[r] - 14, cell)
