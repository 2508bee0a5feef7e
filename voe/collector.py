"""Python's cyclic garbage collector during large batch work (an ingest's build and writes)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between collections of the youngest generation inside `relaxed()`


@contextmanager
def relaxed() -> Iterator[None]:
    """Left as it is, the collector traverses the rows a record build holds again and again while it allocates
    more (half of a 100k-component build, a third of the client's CPU in a streamed write). Inside this block
    what existed at its start is frozen out of the collector's view and the youngest generation is collected
    every YOUNG_THRESHOLD allocations instead of 700: cyclic garbage (a parser's object graph) is still
    collected, a little later. Everything is handed back to the collector at the end (`gc.unfreeze`, which also
    unfreezes what a caller may have frozen before)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
