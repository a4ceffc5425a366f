"""AIR's candidates (transitions/sql/rewards/_air_candidates.sql, read by _air_rule_hits): the whole view,
without its join to the span attributes, and the retry test over the prompts."""

from pathlib import Path

BEFORE = "TEMP TABLE _air_rule_hits AS"
_SQL = (Path(__file__).resolve().parents[2] / "transitions/sql/rewards/_air_candidates.sql").read_text()
_BODY = "\n".join(line for line in _SQL.splitlines() if not line.startswith("--"))
_NO_JOIN = (_BODY.replace("LEFT JOIN spans sp ON sp.trace_id = f.trace_id AND sp.span_id = f.span_id", "")
            .replace("sp.attributes, sp.events", "NULL::JSON AS attributes, NULL::JSON AS events")
            .replace("sp.events", "NULL::VARCHAR"))
_COUNT = "SELECT count(*), count(target_span_id), sum(hash(retried)), sum(hash(args_valid)) FROM ({})"
_PATTERN = r"""'"(content|tool_calls)":\s*("[^"]|\[)'"""
VARIANTS = {
    "the statement's query": lambda q: "SELECT count(*) FROM (" + q + ")",
    "candidates": _COUNT.format(_BODY),
    "candidates, no join to the span attributes": _COUNT.format(_NO_JOIN),
    "retry test: replace + regexp + hash": f"SELECT count(*) FILTER (WHERE regexp_matches(replace(txt, '\"__REDACTED__\"', "
                                           f"'null'), {_PATTERN})), sum(hash(txt)) FROM (SELECT CAST(input_messages AS "
                                           "VARCHAR) AS txt FROM _rollout_calls)",
    "retry test: hash only": "SELECT sum(hash(CAST(input_messages AS VARCHAR))) FROM _rollout_calls",
}
