"""What one-line text a learner types (a group's name, a note) may not hold."""

from __future__ import annotations

import unicodedata

# Bidirectional marks, overrides and isolates reorder the text around them: a name or a note
# holding one can show others text in an order it was not written in (the "Trojan Source"
# trick, CVE-2021-42574).
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def has_control_characters(text: str) -> bool:
    """A control character (a newline included) or a text-direction character in `text`."""
    return any(unicodedata.category(ch) == "Cc" or ch in BIDI_CONTROLS for ch in text)
