"""AIR: automatic intermediate rewards from what OTel already records (docs/transitions.md).

Agent Lightning's paper names AIR but ships no code for it. Here a rule is data, not Python: a name,
a SQL predicate over ``_air_candidates`` (one row per span, plus one per tool call no span ran; see
``sql/rewards/_air_candidates.sql``) and a value. Defaults live in ``air_defaults.toml``; users add or
override rules in ``spanrl.toml``::

    [air]
    defaults = true            # keep the built-in rules (default)
    [[air.rules]]
    name = "slow_tool"
    when = "is_tool AND end_ns - start_ns > 5e9"
    value = -0.05

Every hit becomes a ``rewards`` row (source ``air``) aimed at the LLM call that caused it.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from spanrl.config import ConfigFile, load_config_file, parse_toml
from spanrl.errors import InputError
from spanrl.transitions.sqlfiles import read_sql


@dataclass(frozen=True)
class AirRule:
    """One rule: ``when`` is a SQL boolean expression over ``_air_candidates``."""

    name: str
    when: str
    value: float


def default_rules() -> list[AirRule]:
    return list(_default_rules())


@cache
def _default_rules() -> tuple[AirRule, ...]:
    """The packaged rules, parsed once per process (they change only with the release)."""
    text = resources.files("spanrl.transitions").joinpath("air_defaults.toml").read_text()
    return tuple(_parse_rules(parse_toml(text, "air_defaults.toml").get("rules", []), "air_defaults.toml"))


def _parse_rules(items: list[Any], where: str) -> list[AirRule]:
    rules = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not {"name", "when", "value"} <= set(item):
            raise InputError(f"{where}: AIR rule #{i + 1} needs name, when and value (got {item!r})")
        unknown = sorted(set(item) - {"name", "when", "value"})
        if unknown:  # a typo ("vaule", "where") would otherwise be dropped and the rule read without it
            hints = [f"{k!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, ["name", "when", "value"], 1))
                     else repr(k) for k in unknown]
            raise InputError(f"{where}: AIR rule {item.get('name', f'#{i + 1}')!r}: unknown key {', '.join(hints)}; "
                             "a rule has exactly name, when and value")
        try:
            value = float(item["value"])
        except (TypeError, ValueError):
            raise InputError(f"{where}: AIR rule {item['name']!r}: value must be a number") from None
        if not math.isfinite(value):
            raise InputError(f"{where}: AIR rule {item['name']!r}: value must be finite")
        when = str(item["when"]).strip()
        if not when or ";" in when:
            raise InputError(f"{where}: AIR rule {item['name']!r}: `when` must be one SQL expression (no ';')")
        rules.append(AirRule(str(item["name"]), when, value))
    return rules


def load_air_rules(config_file: Path | ConfigFile | None, table: dict[str, Any] | None = None) -> list[AirRule]:
    """Defaults, then the ``[air]`` rules of ``spanrl.toml`` (a path, or the file parsed already;
    same name replaces, order kept). ``table``: an ``[air]`` table given directly (tests)."""
    file = config_file if isinstance(config_file, ConfigFile) else load_config_file(config_file)
    if table is None:
        table = file.table("air", ("defaults", "rules"))
    else:
        unknown = set(table) - {"defaults", "rules"}
        if unknown:
            raise InputError(f"[air]: unknown keys {', '.join(sorted(unknown))} (use defaults, rules)")
    rules = default_rules() if table.get("defaults", True) else []
    for rule in _parse_rules(table.get("rules", []), file.where("air", "rules") if file.path else "[air]"):
        rules = [r for r in rules if r.name != rule.name] + [rule]
    return rules


def air_rule_hits_sql(con: duckdb.DuckDBPyConnection, rules: list[AirRule]) -> str:
    """Bind the rules into ``_air_rules``; return the SELECT for ``_air_rule_hits``."""
    con.execute("CREATE OR REPLACE TEMP TABLE _air_rules (rule_index INTEGER, name VARCHAR, value DOUBLE)")
    if rules:
        con.executemany("INSERT INTO _air_rules VALUES (?, ?, ?)",
                        [(i, r.name, r.value) for i, r in enumerate(rules)])
    cases = ", ".join(f"CASE WHEN ({r.when}) THEN {i} END" for i, r in enumerate(rules))
    return read_sql("rewards/_air_rule_hits").replace("/*RULE_CASES*/", cases)


def bad_rule_error(con: duckdb.DuckDBPyConnection, rules: list[AirRule], exc: duckdb.Error) -> Exception:
    """The combined rule query failed: plan each predicate alone to name the rule at fault.

    Each predicate is planned over an empty copy of ``_air_candidates`` (planning the view itself
    costs seconds; its columns are all a predicate needs)."""
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _air_probe AS SELECT * FROM _air_candidates WHERE false")
    except duckdb.Error:
        return exc
    for rule in rules:
        try:
            con.execute(f"EXPLAIN SELECT CASE WHEN ({rule.when}) THEN 0 END FROM _air_probe").fetchall()
        except duckdb.Error as own:
            return InputError(
                f"AIR rule {rule.name!r}: `when = {rule.when!r}` is not a valid predicate over _air_candidates "
                f"({str(own).splitlines()[0]}); fix it in spanrl.toml [air]"
            )
    return exc


def rules_as_dicts(rules: list[AirRule]) -> list[dict[str, Any]]:
    """For the manifest: the resolved rules travel with the snapshot."""
    return [asdict(r) for r in rules]
