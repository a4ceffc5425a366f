"""A call recorded by two instrumentations in two traces (OpenInference LangChain's span in the agent's
trace, the client instrumentation's span a root of a trace of its own) can reach the lake on two
different nights. The incremental build must still merge the two into one llm_calls row and one
rollout, exactly as a from-scratch build does (incremental/twins.sql pulls the stored half back in)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spanrl.transitions.snapshot import latest_manifest
from tests.transitions.test_incremental import S, _ingest, _kv, _same, _span, _table

ZERO = ("--missing-reward", "zero")  # the runs carry no reward; their transitions still count
LC, V2 = "openinference.instrumentation.langchain", "opentelemetry.instrumentation.openai_v2"


def _agent_trace(n: str, t: int) -> list[dict]:
    """The agent's trace: a LangGraph chain with one OpenInference LLM span (content, no response id)."""
    tid, root = os.urandom(16).hex(), os.urandom(8).hex()
    llm = {"openinference.span.kind": "LLM", "llm.model_name": "m", "llm.input_messages.0.message.role": "user",
           "llm.input_messages.0.message.content": f"question {n}", "llm.output_messages.0.message.role": "assistant",
           "llm.output_messages.0.message.content": f"answer {n}", "llm.token_count.prompt": 2,
           "llm.token_count.completion": 2}
    return [_span(tid, root, None, "LangGraph", t, t + 4 * S, {"openinference.span.kind": "CHAIN"}),
            _span(tid, os.urandom(8).hex(), root, "ChatOpenAI", t + S, t + 3 * S, llm)]


def _client_trace(n: str, t: int) -> list[dict]:
    """The same request seen by the client instrumentation with content capture off: a root span."""
    return [_span(os.urandom(16).hex(), os.urandom(8).hex(), None, "chat m", t + S + 1000, t + 3 * S - 1000,
                  {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.id": f"resp-{n}",
                   "gen_ai.usage.input_tokens": 2, "gen_ai.usage.output_tokens": 2})]


def _write(roots: list[Path], night: int, by_scope: dict[str, list[dict]]) -> None:
    line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "lg")]},
                                          "scopeSpans": [{"scope": {"name": s}, "spans": sp} for s, sp in by_scope.items()]}]})
    for root in roots:
        (root / "otel").mkdir(parents=True, exist_ok=True)
        (root / "otel" / f"traces-night-{night}.jsonl").write_text(line + "\n")


def test_twins_that_arrive_on_two_nights_are_merged_as_from_scratch(tmp_path: Path) -> None:
    inc, full = tmp_path / "inc", tmp_path / "full"
    day = 86_400 * S
    # night 0: p's agent trace, q's client span; night 1: p's client span, q's agent trace
    _write([inc, full], 0, {LC: _agent_trace("p", 0), V2: _client_trace("q", day // 2)})
    _ingest(inc, *ZERO), _ingest(full, "--rebuild", *ZERO)
    _same(inc, full)
    assert len(_table(inc, "rollouts", "rollout_id")) == 2  # each half alone so far
    _write([inc, full], 1, {V2: _client_trace("p", 0), LC: _agent_trace("q", day // 2)})
    _ingest(inc, *ZERO), _ingest(full, "--rebuild", *ZERO)
    st = _same(inc, full)
    assert st["mode"] == "incremental" and st["traces_recomputed"] == 4  # both new halves pull their stored twin in
    calls = _table(inc, "llm_calls", "trace_id, span_id")
    assert len(calls) == 2
    rollouts = _table(inc, "rollouts", "rollout_id")
    assert len(rollouts) == 2 and all(len(r[2]) == 2 for r in rollouts)  # one rollout per run, over both traces
    s = latest_manifest(inc)["stats"]
    assert s["llm_calls_merged"] == 2 and s["llm_calls_merged_across_traces"] == 2
    assert s["llm_calls_without_tool_schema"] == 0
