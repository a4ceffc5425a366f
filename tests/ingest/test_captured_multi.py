"""One LangGraph agent under several OTel instrumentations at once (recorded from the real libraries:
tests/data/ingest/captured_multi/record.sh): OpenInference LangChain + the official GenAI openai-v2,
plus OpenInference openai in two rollout attempts, and the zero-code path (`opentelemetry-instrument`
with every installed instrumentor, OpenLLMetry included). LangChain runs the client off the OTel
context, so the client instrumentations' spans sit in traces of their own. Every model request the
fake server answered must still be exactly one llm_calls row (content from whichever instrumentation
captured it, tools on every tool-calling row, tokens once), one transition, and every run one rollout."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from spanrl.ingest.views import connect
from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import IngestConfig
from spanrl.transitions.tables import current_tables
from tests.ingest.conftest import ingest_captured, rows_of
from tests.ingest.test_real_instrumentation import assert_holds_exchange

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured_multi"


@pytest.fixture(scope="module")
def multi_lake(tmp_path_factory):
    data = tmp_path_factory.mktemp("multi")
    s, exchanges = ingest_captured(CAPTURED, data)
    assert (s.rejects, s.logs) == (0, 0) and s.spans > 2 * len(exchanges)  # every request recorded at least twice
    return data, exchanges


@pytest.fixture(scope="module")
def lake_con(multi_lake):
    return connect(multi_lake[0])  # binding the views costs a second or two: once per module


@pytest.fixture(scope="module")
def calls(multi_lake, lake_con):
    return rows_of(lake_con, "SELECT * FROM llm_calls"), multi_lake[1]


def test_every_model_request_is_exactly_one_row_holding_what_the_server_saw(calls) -> None:
    rows, exchanges = calls
    assert sorted(r["response_id"] for r in rows) == sorted(resp["id"] for _, resp in exchanges)
    by_id = {r["response_id"]: r for r in rows}
    for req, resp in exchanges:
        row = by_id[resp["id"]]
        assert_holds_exchange(row, req, resp)  # tokens once, not doubled; content although openai-v2 had none
        if req.get("tools"):  # tool definitions from whichever instrumentation recorded them
            assert [t["function"]["name"] for t in json.loads(row["tools"])] == [t["function"]["name"] for t in req["tools"]]


def test_each_row_names_the_spans_merged_into_it_from_its_own_process_only(lake_con, calls) -> None:
    rows, _ = calls
    con = lake_con
    resource = {(r["trace_id"], r["span_id"]): r["resource"]
                for r in rows_of(con, "SELECT trace_id, span_id, CAST(resource AS VARCHAR) AS resource FROM spans")}
    for row in rows:
        merged = row["merged_spans"]
        assert merged and all(m["trace_id"] != row["trace_id"] for m in merged)  # the client spans: other traces
        # the two attempts ran at once with identical requests: never merged across processes
        assert {resource[(m["trace_id"], m["span_id"])] for m in merged} == {resource[(row["trace_id"], row["span_id"])]}
    members = [(m["trace_id"], m["span_id"]) for r in rows for m in r["merged_spans"]]
    assert len(members) == len(set(members))  # a span is merged into one call only


def test_nothing_is_reported_unreadable_or_without_tool_schema(lake_con) -> None:
    assert rows_of(lake_con, "SELECT * FROM coverage") == []


def test_one_rollout_per_run_and_one_transition_per_request(multi_lake, lake_con) -> None:
    data, exchanges = multi_lake
    result = build_transitions(IngestConfig(data=data, settle_s=0, threads=2, missing_reward="zero"))
    assert result.status == "written" and result.rows == len(exchanges)  # one transition per request
    assert result.stats["llm_calls_merged"] == result.stats["llm_calls_merged_across_traces"] == len(exchanges)
    assert result.stats["llm_calls_without_tool_schema"] == 0 and result.stats["content_coverage"] == []

    files = [str(p) for p in current_tables(data)[0]["rollouts"]]
    rollouts = rows_of(duckdb.connect(), f"SELECT rollout_id, trace_ids, n_llm_calls, n_tool_calls FROM read_parquet({files!r})")
    traces = {t for (t,) in lake_con.execute("SELECT DISTINCT trace_id FROM spans").fetchall()}
    assert {t for r in rollouts for t in r["trace_ids"]} == traces
    keyed = {r["rollout_id"]: (r["n_llm_calls"], r["n_tool_calls"]) for r in rollouts if r["rollout_id"].startswith(("multi-", "zero-"))}
    assert keyed == {"multi-a0": (2, 1), "multi-a1": (2, 1), "zero-a0": (2, 1), "zero-a1": (2, 1)}
    # live traffic: two graph runs (2 calls, 1 tool) and the two batched requests (each its own LangChain run)
    assert sorted((r["n_llm_calls"], r["n_tool_calls"]) for r in rollouts if r["rollout_id"] not in keyed) == [
        (1, 0), (1, 0), (2, 1), (2, 1)]
    assert sum(r["n_llm_calls"] for r in rollouts) == len(exchanges)
    assert all(r["n_llm_calls"] > 0 for r in rollouts)  # no rollout made of a client span's trace alone
