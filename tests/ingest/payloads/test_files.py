"""JSON pointers (RFC 6901, the jsonpointer library) as the ingest writes and reads them."""

from __future__ import annotations

import pytest

from voe.ingest.payloads.files import escape_pointer_token, pointer_of, resolve_pointer

DOC = {"components": [{"filepath": "a/b.csv", "~tilde/slash": [0, {"": "empty key"}]}], "n": 3}


def test_a_pointer_made_from_a_path_resolves_to_its_value() -> None:
    pointer = pointer_of(["components", 0, "~tilde/slash", 1, ""])
    assert pointer == "/components/0/~0tilde~1slash/1/"
    assert resolve_pointer(DOC, pointer) == "empty key"
    assert escape_pointer_token("x/y~z") == "x~1y~0z" and escape_pointer_token(7) == "7"
    assert resolve_pointer(DOC, "") is DOC


@pytest.mark.parametrize("pointer", ["/components/5", "/components/0/missing", "/n/0", "components", "/components/-",
                                     "/components/x"])
def test_a_pointer_that_names_nothing_is_a_key_error(pointer: str) -> None:
    with pytest.raises(KeyError):
        resolve_pointer(DOC, pointer)
