"""A run's raw rows, one per rank per measured step, for its CSV and JSON downloads.

A worker's `measurement` event holds what the whole step shares (`iteration`, `correct`) and one
entry per rank (`ranks`). A row is the step's fields, then the rank's; nested objects become
dotted names ("memory.params", "forward.wire_bytes"). Numbers are written as measured, never
formatted. Lists stay lists in JSON and are written as JSON text in a CSV cell.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

# What names a row, first where a demo has it: the step, what ran in it, then the rank.
LEADING = ("iteration", "strategy", "layout", "schedule", "mode", "case", "kind", "step", "rank")


def measurement_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for event in events:
        if event.get("event") != "measurement":
            continue
        step = _flat({k: v for k, v in event.items() if k not in ("event", "ranks")})
        rows += [_leading_first({**step, **_flat(rank)}) for rank in event.get("ranks", [])]
    return rows


def _leading_first(row: dict[str, Any]) -> dict[str, Any]:
    first = {key: row[key] for key in LEADING if key in row}
    return {**first, **{k: v for k, v in row.items() if k not in first}}


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def rows_csv(rows: list[dict[str, Any]]) -> str:
    """A header of every column any row has, in the order first seen; an empty cell where a
    row has none (None, or a column another step added)."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, list | dict):
        return json.dumps(_finite(value), separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return value  # numbers as Python writes them (repr: every digit), None as empty


def rows_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(_finite(rows), allow_nan=False)


def _finite(value: Any) -> Any:
    """JSON has no infinity or NaN: they are written as the strings "inf", "-inf" and "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value
