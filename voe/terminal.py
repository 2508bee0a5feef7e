"""Text from inputs (folder and file names, NERDm ids and titles, a server's message) made safe to print: a
terminal interprets control characters (ESC starts a sequence that can retitle the window, move the cursor,
hide text or, on some terminals, answer back), so every message that may echo input goes through `safe`."""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 (but tab and newline), DEL, C1


def safe(text: object) -> str:
    """`text` with each control character but tab and newline written as its escape (`\\x1b`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1] if m.group() != "\r" else "\\r", str(text))
