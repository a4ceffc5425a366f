"""Your own convention without Python: ``[[conventions]]`` mappings in ``spanrl.toml``.

A team with a home-grown instrumentation names, per field, where its spans keep the prompt, the
response, the tools, the model and the token ids; each mapping joins the conventions registry as
view ``llm_calls_<name>``, next to the built-in ones (docs/lake.md, "Your own convention")::

    [[conventions]]
    name = "acme"                                   # llm_calls.convention of its rows
    match = "acme.llm.request"                      # a span with this attribute is a model call
    prompt = { attribute = "acme.llm.request", path = "$.messages" }   # JSON text + a path into it
    response = "acme.llm.response"                  # an attribute name
    model = "$.acme.model"                          # or a JSON path over the attributes
    prompt_token_ids = "acme.prompt_ids"

The SQL is one table macro (``sql/mapped_convention.sql``); each mapping reaches it as a DuckDB
variable holding JSON (bound, never pasted into SQL text).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb

from spanrl.config import ConfigFile, load_config_file
from spanrl.errors import InputError

FIELDS = ("prompt", "response", "tools", "model", "prompt_token_ids", "response_token_ids")
NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def _location(where: str, field: str, value: Any) -> dict[str, str | None]:
    """One field's place: {"attr": JSON path over the attributes, "path": JSON path inside that value}."""
    if isinstance(value, dict) and set(value) <= {"attribute", "path"} and isinstance(value.get("attribute"), str):
        path = value.get("path")
        if path is not None and not (isinstance(path, str) and path.startswith("$")):
            raise InputError(f"{where}: {field}.path {path!r} must be a JSON path starting with '$'")
        return {"attr": _attr_path(where, field, value["attribute"]), "path": path}
    if isinstance(value, str) and value.startswith("$"):
        return {"attr": value, "path": None}
    if isinstance(value, str) and value:
        return {"attr": _attr_path(where, field, value), "path": None}
    raise InputError(f"{where}: {field} = {value!r}: give an attribute name, a JSON path over the attributes "
                     "(\"$.a.b\"), or { attribute = \"name\", path = \"$.messages\" }")


def _attr_path(where: str, field: str, name: str) -> str:
    if '"' in name or "\\" in name:
        raise InputError(f"{where}: {field}: an attribute name cannot hold quotes or backslashes: {name!r}")
    return f'$."{name}"'


def load_mapped_conventions(config_file: Path | ConfigFile | None, builtin: list[str]) -> list[dict[str, Any]]:
    """The ``[[conventions]]`` of ``config_file`` (a path, or the file parsed already), checked; each
    as the JSON its SQL reads. Errors name the file and the entry's line."""
    file = config_file if isinstance(config_file, ConfigFile) else load_config_file(config_file)
    entries = file.get("conventions") or []
    if not isinstance(entries, list):
        raise InputError(f"{file.where('conventions')}: write each mapping as a [[conventions]] table")
    mappings, seen = [], set(builtin)
    for i, entry in enumerate(entries):
        where = f"{file.where('conventions', i)}: [[conventions]] #{i + 1}"
        unknown = set(entry) - {"name", "match", *FIELDS}
        if unknown:
            raise InputError(f"{where}: unknown keys {sorted(unknown)}; known: name, match, {', '.join(FIELDS)}")
        name = entry.get("name")
        if not isinstance(name, str) or not NAME.match(name) or name in seen:
            raise InputError(f"{where}: name {name!r} must be new, lower_snake_case, e.g. name = \"acme\"")
        seen.add(name)
        if "prompt" not in entry and "response" not in entry:
            raise InputError(f"{where}: map at least prompt or response")
        fields = {f: _location(where, f, entry[f]) for f in FIELDS if f in entry}
        match = entry.get("match") or (fields.get("prompt") or fields["response"])["attr"]
        match_path = match if match.startswith("$") else _attr_path(where, "match", match)
        # the substring the attributes' JSON text must hold (cheap test before any parse): the first key
        first_key = match_path[3:match_path.index('"', 3)] if match_path.startswith('$."') else \
            re.split(r"[.\[]", match_path[2:])[0]
        mappings.append({"name": name, "match_path": match_path, "match_text": f'"{first_key}"', **fields})
    return mappings


def register_mapped(con: duckdb.DuckDBPyConnection, mappings: list[dict[str, Any]], read_sql) -> list[str]:
    """View ``llm_calls_<name>`` per mapping (values handed over as variables); their view names."""
    if not mappings:
        return []
    con.execute(read_sql("mapped_convention"))
    views = []
    for m in mappings:
        var = f"spanrl_convention_{m['name']}"  # checked lower_snake_case name
        con.execute(f"SET VARIABLE {var} = (SELECT $m::JSON)", {"m": json.dumps(m)})
        con.execute(f"CREATE OR REPLACE VIEW llm_calls_{m['name']} AS "
                    f"SELECT * FROM mapped_convention(getvariable('{var}'))")
        views.append(f"llm_calls_{m['name']}")
    return views
