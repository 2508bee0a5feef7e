"""RFC 8785 (JCS) for every published hash, with the RFC's own test vectors, and the fast path (orjson) giving
the same bytes wherever it is taken."""

from __future__ import annotations

import json
import random
import struct

import pytest

from voe.canonical import _fast, canonical

# RFC 8785 Appendix B: IEEE 754 doubles (as hex) and their JCS form
NUMBERS = [
    ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize("bits,expected", NUMBERS)
def test_rfc_8785_number_vectors(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert canonical(value) == expected.encode()


def test_rfc_8785_sorting_vector() -> None:
    """Appendix: keys sorted by their UTF-16 code units, not by code points or UTF-8 bytes."""
    doc = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
           "1": "One", "\U0001f600": "Emoji: Grinning Face", "\u0080": "Control",
           "\u00f6": "Latin Small Letter O With Diaeresis"}
    order = list(json.loads(canonical(doc)))
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_rfc_8785_main_example() -> None:
    doc = {"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
           "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/", "literals": [None, True, False]}
    assert canonical(doc) == ('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
                              '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}').encode()


def test_the_fast_path_writes_the_same_bytes_as_rfc8785() -> None:
    import rfc8785

    rng = random.Random(8785)
    for _ in range(2000):
        doc = {f"k{rng.randrange(50)}\u00e9{chr(rng.randrange(32, 0xD7FF))}": [
            rng.randrange(-2**53, 2**53), "s\n\t\u0001\u007f\u2028" * rng.randrange(3), None, rng.random() < 0.5,
            {"x": rng.randrange(100)}] for _ in range(rng.randrange(6))}
        assert _fast(doc)
        assert canonical(doc) == rfc8785.dumps(doc)


def test_what_jcs_cannot_represent_is_written_as_json_would_read_it() -> None:
    assert canonical(10**30) == b"1e+30"  # beyond 2^53: the nearest double
    assert json.loads(canonical({"a": "x\udc80y"})) == {"a": "x\udc80y"}  # a lone surrogate stays its escape
    assert canonical(1e-7) == b"1e-7" and canonical([1.0]) == b"[1]"  # no more 1e-07 vs 1e-7


def test_deep_nesting_is_written_on_both_paths() -> None:
    deep: object = "x"
    for _ in range(600):
        deep = [deep]
    assert canonical(deep) == b"[" * 600 + b'"x"' + b"]" * 600  # orjson stops at 255 levels
    with_float: object = 1.5
    for _ in range(600):
        with_float = {"k": with_float}
    assert canonical(with_float) == b'{"k":' * 600 + b"1.5" + b"}" * 600


def test_numbers_json_has_no_form_for_are_written_as_json_parse_reads_them() -> None:
    """NaN and ±Infinity (a record file may hold the tokens) and integers beyond the largest double (JSON.parse
    reads them as Infinity) are the strings of their tokens: a span hash never fails on a record's numbers."""
    from voe.canonical import canonical

    assert canonical({"a": 10**1000, "b": -(10**4000), "c": float("nan"), "d": float("-inf")}) == \
        b'{"a":"Infinity","b":"-Infinity","c":"NaN","d":"-Infinity"}'
    assert canonical(2**64) == b"18446744073709552000"  # within a double's range: the nearest double, as before
