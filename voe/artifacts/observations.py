"""What a request shows at once: an observation within a size budget, the rest of the same item by page (issue 43).

An item's observation (an EvidenceObject) that fits OBSERVATION_BUDGET characters of JSON (about 4k tokens) is shown
whole, as before. A larger one (a folder of hundreds of members: 180 KB) is split into pages, none cut: every page
carries the item's scalar fields (id, status, kind, title, record, provenance and the metadata's non-list values)
and a header `page` saying which page this is, how many there are and how many entries each list has in all
(`counts`), and which of them this page holds (`holds`: [first, last) per list); the list entries (`facts`, then each
metadata list such as `members`) are laid on the pages in the archive's order, as many as fit. Nothing is
reordered, so the position of an entry says nothing the archive does not.

A policy reads page k by requesting the same item again with `page: k` (replay/env.py): the outcome is `page`, it
spends no step of the horizon and nothing of the cost score. `merged` puts an item's pages back together, for the
baselines and the gate's probes that read whole observations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from voe.artifacts.package import EvidenceObject

OBSERVATION_BUDGET = 16_000  # characters of an observation's JSON shown at once (~4k tokens at ~4 characters each)
CHARS_PER_TOKEN = 4  # what the manifest's token estimates divide by


def _size(value: Any) -> int:
    return len(json.dumps(value, sort_keys=True, ensure_ascii=False))


def pages(obj: EvidenceObject | dict[str, Any], budget: int = OBSERVATION_BUDGET) -> list[dict[str, Any]]:
    """The observation of `obj` as one page (it fits `budget`) or several (module docstring)."""
    whole = obj.model_dump(mode="json") if isinstance(obj, EvidenceObject) else dict(obj)
    if _size(whole) <= budget:
        return [whole]
    metadata = whole.get("metadata") or {}
    head = {k: v for k, v in whole.items() if k not in ("facts", "metadata")}
    scalars = {k: v for k, v in metadata.items() if not isinstance(v, list)}
    lists: list[tuple[str, list[Any]]] = [("facts", list(whole.get("facts") or []))]
    lists += [(f"metadata.{k}", list(v)) for k, v in metadata.items() if isinstance(v, list)]
    counts = {name: len(items) for name, items in lists}
    entries = [(name, i, item, _size(item) + 2) for name, items in lists for i, item in enumerate(items)]
    # a page's frame: the head, the metadata's scalars and a header of the largest size it can take
    frame = _size({**head, "metadata": {**scalars, **{n: [] for n, _ in lists}}, "facts": [],
                   "page": {"index": 10**6, "pages": 10**6, "counts": counts,
                            "holds": {name: [10**9, 10**9] for name in counts}, "next": "x" * 80}})
    room = max(1, budget - frame)
    laid: list[list[tuple[str, int, Any]]] = [[]]
    used = 0
    for name, i, item, size in entries:
        if laid[-1] and used + size > room:  # an entry larger than a page has a page of its own, whole
            laid.append([])
            used = 0
        laid[-1].append((name, i, item))
        used += size
    out = []
    for k, chunk in enumerate(laid):
        page: dict[str, Any] = {**head, "facts": [],
                                "metadata": {**scalars, **{n.removeprefix("metadata."): [] for n, _ in lists[1:]}}}
        holds: dict[str, list[int]] = {}
        for name, i, item in chunk:
            if name == "facts":
                page["facts"].append(item)
            else:
                page["metadata"][name.removeprefix("metadata.")].append(item)
            first, last = holds.get(name, [i, i])
            holds[name] = [min(first, i), max(last, i + 1)]
        page["page"] = {"index": k, "pages": len(laid), "counts": counts, "holds": holds,
                        "next": (f"request this item again with page {k + 1} for the rest" if k + 1 < len(laid)
                                 else "this is the last page")}
        out.append(page)
    return out


def page_of(obj: EvidenceObject | dict[str, Any], index: int, budget: int = OBSERVATION_BUDGET) -> dict[str, Any] | None:
    """Page `index` of `obj`'s observation, or None when it has no such page."""
    laid = pages(obj, budget)
    return laid[index] if 0 <= index < len(laid) else None


def unread(observation: dict[str, Any], read: Iterable[int]) -> int | None:
    """The first page of this item not among `read`, or None (one page, or every page read)."""
    header = observation.get("page") if isinstance(observation, dict) else None
    if not isinstance(header, dict):
        return None
    done = set(read)
    return next((k for k in range(int(header.get("pages", 1))) if k not in done), None)


def merged(observations: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One item's pages (any order, any subset) as one observation: the lists joined in the archive's order, the
    page header dropped. An observation of one page is returned as it is."""
    parts = [o for o in observations if isinstance(o, dict)]
    if not parts:
        return {}
    if not any(isinstance(p.get("page"), dict) for p in parts):
        return parts[-1]
    parts.sort(key=lambda p: int((p.get("page") or {}).get("index", 0)))
    whole = {k: v for k, v in parts[0].items() if k not in ("page", "facts", "metadata")}
    metadata: dict[str, Any] = {}
    facts: list[Any] = []
    seen: set[int] = set()
    for part in parts:
        index = int((part.get("page") or {}).get("index", 0))
        if index in seen:
            continue
        seen.add(index)
        facts += part.get("facts") or []
        for key, value in (part.get("metadata") or {}).items():
            if isinstance(value, list):
                metadata.setdefault(key, []).extend(value)
            else:
                metadata[key] = value
    whole["metadata"] = metadata
    whole["facts"] = facts
    return whole


def tokens(chars: int) -> int:
    """An estimate of the tokens of `chars` characters of JSON (the manifest's and `voe run`'s warning's)."""
    return -(-chars // CHARS_PER_TOKEN)


def context_needs(views: Iterable[Any], evidence: dict[str, EvidenceObject],
                  budget: int = OBSERVATION_BUDGET) -> dict[str, Any]:
    """What the package's observations ask of a model's context (manifest counts `observations`): the budget, the
    largest page shown at once, how many items are paged, and per task its largest page and what an episode that
    pulls every item and reads every page holds (the task and every page, in estimated tokens; the instructions
    and the model's own turns come on top)."""
    sizes: dict[str, list[int]] = {}
    for eid, obj in evidence.items():
        sizes[eid] = [_size(p) for p in pages(obj, budget)]
    by_task: dict[str, dict[str, int]] = {}
    for view in views:
        shown = [s for e in view.menu for s in sizes.get(e.evidence_id, [])]
        by_task[view.task_id] = {"largest_page_tokens": tokens(max(shown, default=0)),
                                 "pull_everything_tokens": tokens(len(view.model_dump_json()) + sum(shown))}
    return {"budget_chars": budget, "budget_tokens": tokens(budget),
            "largest_page_tokens": tokens(max((s for ss in sizes.values() for s in ss), default=0)),
            "paged_items": sum(len(ss) > 1 for ss in sizes.values()),
            "pull_everything_tokens_max": max((t["pull_everything_tokens"] for t in by_task.values()), default=0),
            "by_task": by_task}
