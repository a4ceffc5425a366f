"""Property tests over real recordings (issue 42): no value an instrumentation may send stops the night.

Each case is one recorded run of a real instrumentation (tests/data/ingest/captured*, mixes/, the AIR
corpus's runs) with ONE attribute or span field mutated (tests/helpers/mutate.py: dropped, emptied, another
type, another JSON shape, a JSON key inside changed, truncated, a key twice; ids empty or self-parented,
odd status codes and kinds, times as text). Many cases share one lake, each with ids of its own. For
every batch: ``spanrl ingest`` (stage 1 and stage 2) exits 0 and quarantines nothing, every table and view
``spanrl sql`` offers answers, and every mutated value is read or counted:

- the mutated span is in ``spans``, or its line is a reject (file and line);
- a call attribute that should be a number and is not, on a span of an LLM call, is named in that call's
  ``coverage.unreadable``;
- a content attribute that is not JSON or not the JSON shape it should be, on a span of an LLM call whose
  content is then missing, is named there too (when the content was read from another carrier, it was read).

The default suite runs 50 cases (one batch); ``make mutations`` runs 1,000 (8 batches of 125, other seeds).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.mutate import Case, make_cases, recordings, write_cases

SLOW_CASES = int(os.environ.get("SPANRL_MUTATION_CASES", "1000"))
BATCH = 125
NOT_NUMBERS = {"empty", "to_bool", "to_array", "to_kvlist", "json_null", "json_list", "json_string", "json_object",
               "truncate", "not_json", "nested"}


def _query(con, sql: str, params: list | None = None) -> list[dict]:
    rel = con.execute(sql, params or [])
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]


def _text(value: dict | None) -> str | None:
    """What an attribute read by name gives for an OTLP value (a string as it is, anything else as JSON)."""
    if not value:
        return None
    v = next(iter(value.values()))
    if "stringValue" in value:
        return v
    if "arrayValue" in value:  # the lake keeps an array as a JSON list, a kvlist as an object
        return json.dumps([json.loads(_text(x)) if _text(x) and x.get("stringValue") is None else _text(x)
                           for x in v.get("values") or []])
    if "kvlistValue" in value:
        return json.dumps({kv["key"]: _text(kv.get("value")) for kv in v.get("values") or []})
    if "intValue" in value:
        return str(int(v))
    if "boolValue" in value:
        return "true" if v else "false"
    return json.dumps(v)


def check_batch(data: Path, cases: list[Case]) -> list[str]:
    """Ingest the cases into ``data`` and return every problem found (empty: all read or counted)."""
    from spanrl.query import connect

    lines = write_cases(cases, data / "otel")
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", "--missing-reward", "zero"])
    if result.exit_code != 0:
        return [f"spanrl ingest exit {result.exit_code}: {result.output[-2000:]} {result.exception!r}"]
    problems: list[str] = []
    con = connect(data)
    names = {r["name"] for r in _query(con, "SELECT table_name AS name FROM duckdb_tables() WHERE NOT internal "
                                            "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal")}
    for name in sorted(n for n in names if not n.startswith("_")):
        try:
            con.execute(f'SELECT count(*) FROM "{name}"').fetchall()
        except Exception as exc:  # any error here is the finding
            problems.append(f"table {name}: {exc}")
    if "quarantine" in names:
        problems += [f"quarantined {q['trace_id']}: {q['error']}" for q in _query(con, "SELECT * FROM quarantine")]
    spans = {(r["trace_id"], r["span_id"]) for r in _query(con, "SELECT trace_id, span_id FROM spans")}
    rejected = {r["line"] for r in _query(con, "SELECT line FROM rejects WHERE file LIKE '%traces-mutated%'")}
    members: dict[tuple[str, str], tuple[str, str, bool]] = {}
    for r in _query(con, """SELECT trace_id, span_id, merged_spans,
                                   coalesce(json_array_length(input_messages), 0) = 0 OR output_message IS NULL AS missing
                            FROM llm_calls"""):
        for m in [{"trace_id": r["trace_id"], "span_id": r["span_id"]}, *(r["merged_spans"] or [])]:
            members[(m["trace_id"], m["span_id"])] = (r["trace_id"], r["span_id"], r["missing"])
    named = {(r["trace_id"], r["span_id"], u["span_id"], u["key"])
             for r in _query(con, "SELECT trace_id, span_id, unreadable FROM coverage") for u in r["unreadable"] or []}
    for case in cases:
        where = f"case {case.number} ({case.recording}, {case.op} on {case.target})"
        if (case.trace_id, case.span_id) not in spans and not rejected & set(lines[case.number]):
            problems.append(f"{where}: the span is neither in spans nor a reject")
            continue
        call = members.get((case.trace_id, case.span_id))
        if call is None or case.key is None or case.value is None:
            continue
        text = _text(case.value)
        if case.key in NUMBER_KEYS and case.op in NOT_NUMBERS and text is not None:
            if _query(con, "SELECT try_cast(? AS DOUBLE) IS NULL AS bad", [text])[0]["bad"] and \
                    (call[0], call[1], case.span_id, case.key) not in named:
                problems.append(f"{where}: {text[:60]!r} is not a number and coverage.unreadable does not say so")
        problem = _query(con, "SELECT CASE WHEN coverage_content_key(k) THEN coverage_content_problem(k, t) END AS p "
                              "FROM (SELECT ?::VARCHAR AS k, ?::VARCHAR AS t)", [case.key, text])[0]["p"]
        if problem and call[2] and (call[0], call[1], case.span_id, case.key) not in named:
            problems.append(f"{where}: content {problem} and missing, but coverage.unreadable does not name it")
    con.close()
    return problems


NUMBER_KEYS = {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "gen_ai.usage.output_tokens",
               "gen_ai.usage.completion_tokens", "gen_ai.request.temperature"}


def test_fifty_mutations_of_real_recordings_are_read_or_counted(tmp_path) -> None:
    cases = make_cases(recordings(), 50, seed=42)
    assert len({c.recording for c in cases}) >= 10  # several instrumentations, not one recording 50 times
    problems = check_batch(tmp_path / "data", cases)
    assert not problems, "\n".join(problems)


@pytest.mark.mutations
@pytest.mark.parametrize("batch", range((SLOW_CASES + BATCH - 1) // BATCH))
def test_a_thousand_mutations_are_read_or_counted(tmp_path, batch) -> None:
    cases = make_cases(recordings(), min(BATCH, SLOW_CASES - batch * BATCH), seed=1000 + batch, start=batch * BATCH)
    problems = check_batch(tmp_path / "data", cases)
    assert not problems, "\n".join(problems)
