"""Python-literal attribute values -> JSON text: the one value format SQL cannot parse.

LiteLLM's OpenTelemetry logger records each provider request and response on a
``raw_gen_ai_request`` span as ``str()`` of Python objects (``llm.openai.messages = "[{'role':
'user', 'content': "it's"}]"``, with ``None``/``True``): not JSON, and no string rewrite turns
it into JSON safely (either quote can appear inside a value). ``py_literal_json`` reads such a
value with ``ast.literal_eval`` (literals only: nothing is executed) and writes it as JSON; a value
that already is JSON passes through; anything else gives NULL, which the convention reports as a
call without content (the ``coverage`` view) rather than guessing.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import duckdb


def _one(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        value: Any = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return None


def register_py_literal_json(con: duckdb.DuckDBPyConnection) -> None:
    """``py_literal_json(VARCHAR) -> VARCHAR`` on ``con`` (once per connection): a scalar function, not an
    Arrow one, whose result built from a Python list would import pandas (pyarrow looks for it, 0.3 CPU s)
    for the few values LiteLLM's spans hold."""
    try:  # asking duckdb_functions() first scans the whole catalog (15 ms, on every build)
        con.create_function("py_literal_json", _one, [duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"),
                            null_handling="special", side_effects=False)  # _one gives NULL for what it cannot read
    except duckdb.NotImplementedException as exc:  # "... is already created": this connection has it
        if "already created" not in str(exc):
            raise
