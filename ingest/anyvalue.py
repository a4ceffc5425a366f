"""OTLP AnyValues nested to any depth -> plain JSON text: the one SQL function ingest takes from Python.

The SQL macros in ``otlp_types.sql`` convert arrays and kvlists level by level, and a macro level
costs ~5x the binding time of the one below it (nested lambdas), so they stop at a few levels. Log
records of GenAI semconv >= 1.37 carry whole conversations as AnyValues
(``gen_ai.input.messages``: array > kvlist > array > kvlist > tool-call arguments > ...), deeper
than any fixed number of levels. ``otlp_any_json`` converts one nested value, whatever its depth;
DuckDB calls it only for nested log-record attributes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import duckdb

SCALARS = ("stringValue", "boolValue", "doubleValue", "bytesValue")


def plain(v: Any) -> Any:
    """One AnyValue dict as a plain JSON value (int64 as a number, bytes as base64 text, NaN and
    infinities as strings, an unknown value kind kept whole, as the SQL macros do)."""
    if not isinstance(v, dict) or not v:
        return None
    if "kvlistValue" in v:
        return {kv.get("key"): plain(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "arrayValue" in v:
        return [plain(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        x = v["doubleValue"]
        return x if isinstance(x, (int, float)) and math.isfinite(x) else str(x)
    for key in SCALARS:
        if key in v:
            return v[key]
    return v


def _convert(text: str) -> str:
    return json.dumps(plain(json.loads(text)), ensure_ascii=False, separators=(",", ":"))


def register_any_json(con: duckdb.DuckDBPyConnection) -> None:
    """``otlp_any_json(VARCHAR) -> VARCHAR`` on ``con``: a scalar function (NULL in, NULL out), not an Arrow
    one. Its values are few (nested log-record attributes: 10,836 in a 60k-span night of recorded frameworks)
    and an Arrow function's result built from a Python list imports pandas (pyarrow looks for it): 0.33 of the
    0.64 CPU s the function took in that night's stage 1, once per process."""
    con.create_function("otlp_any_json", _convert, [duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"),
                        side_effects=False)
