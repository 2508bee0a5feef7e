"""One JSON Lines reader: what it cannot read is an input error naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from voe import jsonl
from voe.artifacts.package import MenuEntry
from voe.errors import InputError
from voe.jsonl import dump_models, read_jsonl


def test_blank_lines_are_skipped_and_a_bad_line_is_named(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"a": 1}\n\n[2]\r\n{"x": NaN}\n{"big": 18446744073709551616, "s": "a\u2028b"}\n')
    rows = read_jsonl(good)
    assert rows[:2] == [{"a": 1}, [2]] and rows[2]["x"] != rows[2]["x"]  # NaN, as Python's json reads it
    assert rows[3] == {"big": 2**64, "s": "a\u2028b"}  # exact beyond 64 bits; U+2028 is not a line break
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(InputError, match="line 2 is not JSON") as err:
        read_jsonl(bad)
    assert str(bad) in str(err.value)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"a": "\xb5m"}\n')
    with pytest.raises(InputError, match="line 1 is not UTF-8"):
        read_jsonl(latin)
    with pytest.raises(InputError, match="cannot read"):
        read_jsonl(tmp_path / "missing.jsonl")


def test_models_are_written_with_sorted_keys_and_unicode_kept() -> None:
    entry = MenuEntry(entry_id="E1", evidence_id="ev:1", kind="characterization", title="µm grid",
                      request_action="request_characterization")
    line = dump_models([entry])
    assert line == ('{"entry_id": "E1", "evidence_id": "ev:1", "kind": "characterization", '
                    '"request_action": "request_characterization", "title": "µm grid"}\n').encode()


def test_chunks_end_at_line_ends_and_keep_the_line_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = '{"a": 1}\n\n[2]\n{"big": 18446744073709551616}\n' * 40 + '{"a": \n[3]\n'
    path = tmp_path / "many.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match="line 161 is not JSON"):
        read_jsonl(path)
    path.write_text(text.replace('{"a": \n', ""))
    whole = read_jsonl(path)
    for size in (1, 7, 50):  # a chunk cut inside lines (it runs on to the next line end) and across many
        monkeypatch.setattr(jsonl, "CHUNK_BYTES", size)
        assert read_jsonl(path) == whole
        assert whole[2] == {"big": 2**64} and len(whole) == 121
        path.write_text(text)
        with pytest.raises(InputError, match="line 161 is not JSON"):
            read_jsonl(path)
        path.write_text(text.replace('{"a": \n', ""))
