"""The one canonical JSON of every hash voe publishes (span hashes of source locations): RFC 8785, the JSON
Canonicalization Scheme (JCS). orjson writes the same bytes for the common case (no float, integers within
±2^53, keys without characters beyond the Basic Multilingual Plane) about ten times faster, so it takes that
case; the `rfc8785` package takes the rest.

What RFC 8785 cannot represent is written as JSON.parse would read it: an integer beyond ±2^53 as the double
nearest to it (10^30 -> 1e+30); a lone surrogate (a `\\udcxx` escape with no pair, which has no UTF-8 form) as
that escape, six ASCII characters. NaN and ±Infinity, which a record file can hold (Python's and JavaScript's
parsers accept the tokens) but JSON cannot, are written as the strings "NaN", "Infinity" and "-Infinity"; so is
an integer beyond the largest double (JSON.parse reads 10^400 as Infinity).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import orjson
import rfc8785

SAFE_INT = 2**53
MARK = "\U0010ffff"  # a noncharacter: stands for a lone surrogate until the bytes are written
MARK_BYTES = MARK.encode()


def _fast(value: Any) -> bool:
    """True when orjson's sorted output is byte for byte JCS."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if -SAFE_INT <= v <= SAFE_INT:
                continue
            return False
        if t is dict:
            for k in v:
                # JCS sorts by UTF-16 code units: a key beyond the BMP sorts otherwise than orjson's code points
                if type(k) is not str or (not k.isascii() and max(k) > "\uffff"):
                    return False
            stack.extend(v.values())
            continue
        if t is list or t is tuple:
            stack.extend(v)
            continue
        return False  # floats, and anything else, take the careful path
    return True


def non_finite(value: float) -> str:
    """The token a record file holds for a float JSON has no form for."""
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def _jcs_ready(value: Any) -> Any:
    """`value` with what JCS cannot represent replaced as the module docstring says."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if -SAFE_INT <= value <= SAFE_INT:
            return value
        try:
            return float(value)
        except OverflowError:  # beyond the largest double: JSON.parse reads it as ±Infinity
            return non_finite(float("inf") if value > 0 else float("-inf"))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return non_finite(value)
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:  # each lone surrogate becomes a marker that canonical() turns into its escape
            return "".join(f"{MARK}{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, dict):
        return {_jcs_ready(k): _jcs_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jcs_ready(v) for v in value]
    raise TypeError(f"a {type(value).__name__} is not JSON")


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (dicts, lists, str, int, float, bool, None)."""
    if _fast(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            # a lone surrogate, or nesting deeper than orjson's 255 levels: json writes the same bytes for what
            # the fast path takes (no float; sorted keys are JCS's order), the surrogate as its escape
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
                "utf-8", "backslashreplace")
    try:
        out = _careful(value)
    except RecursionError:  # records are refused beyond 512 levels (ingest.sources.nerdm.build.MAX_JSON_DEPTH): room for them
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            out = _careful(value)
        finally:
            sys.setrecursionlimit(limit)
    return out


def _careful(value: Any) -> bytes:
    out = rfc8785.dumps(_jcs_ready(value))
    if MARK_BYTES in out:
        head, *rest = out.split(MARK_BYTES)
        out = head + b"".join(b"\\u" + part for part in rest)
    return out
