"""Python's cyclic garbage collector during large batch work (an ingest's build and writes)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between collections of the youngest generation inside `relaxed()`
_depth = 0  # how many `relaxed()` blocks are open


@contextmanager
def relaxed() -> Iterator[None]:
    """Left as it is, the collector traverses the rows a record build holds again and again while it allocates
    more (half of a 100k-component build, a third of the client's CPU in a streamed write). Inside this block
    what existed at its start is frozen out of the collector's view and the youngest generation is collected
    every YOUNG_THRESHOLD allocations instead of 700: cyclic garbage (a parser's object graph) is still
    collected, a little later. Everything is handed back to the collector at the end (`gc.unfreeze`, which also
    unfreezes what a caller may have frozen before)."""
    global _depth
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        gc.set_threshold(*threshold)
        gc.unfreeze()


def after_large_parse() -> None:
    """Inside `relaxed()`: collect now. A PDF's parse leaves a large cyclic object graph (pdfminer's objects
    point to their parents) that has aged into the oldest generation by the time it is garbage, which the
    relaxed collector would reach much later."""
    if _depth:
        gc.collect()
