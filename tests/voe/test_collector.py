"""voe.collector: inside `relaxed()` what existed is frozen and the youngest generation is collected less often;
both are given back after, and cyclic garbage is still collected inside."""

from __future__ import annotations

import gc
import weakref

from voe import collector


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_relaxed_freezes_raises_the_threshold_and_gives_both_back() -> None:
    before = gc.get_threshold()
    with collector.relaxed():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == max(before[0], collector.YOUNG_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_cycles_made_inside_are_still_collected() -> None:
    with collector.relaxed():
        ref = weakref.ref(_Cycle())
        assert ref() is not None  # a cycle: reference counting alone does not free it
        collector.after_large_parse()
        assert ref() is None


def test_after_large_parse_does_nothing_outside() -> None:
    gc.disable()
    try:
        ref = weakref.ref(_Cycle())
        collector.after_large_parse()
        assert ref() is not None
    finally:
        gc.enable()
        gc.collect()
