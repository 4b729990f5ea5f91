"""What every calculator query refuses before any formula runs: a field it does not know (a
typo would otherwise be ignored silently), and a number that is not finite (JSON bodies may
carry NaN, Infinity or 1e400, which Python's json module reads as floats; no calculator has
an answer for them)."""

from __future__ import annotations

from pydantic import ConfigDict

QUERY_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)
