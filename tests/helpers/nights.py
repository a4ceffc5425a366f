"""Nights of agent traffic as a collector leaves them (one OTLP/JSON span file per night), for tests that
need a root of several date partitions built by the project's own ``spanrl ingest``."""

from __future__ import annotations

import json
import os
from pathlib import Path

T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z: night n is 2026-01-(n+1)
S = 1_000_000_000
ARGS = ["--settle", "0s", "--missing-reward", "zero"]


def night_date(night: int) -> str:
    return f"2026-01-{night + 1:02d}"


def _kv(key: str, value: object) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(tid: str, parent: str | None, name: str, start: int, attrs: dict, sid: str | None = None) -> dict:
    span = {"traceId": tid, "spanId": sid or os.urandom(8).hex(), "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + start), "endTimeUnixNano": str(T0 + start + S // 2),
            "attributes": [_kv(k, v) for k, v in attrs.items()], "status": {}}
    if parent:
        span["parentSpanId"] = parent
    return span


def write_night(otel: Path, night: int, rollouts: int = 30, calls: int = 3, text: int = 96) -> Path:
    """``rollouts`` agent runs of ``calls`` chat calls each (prompts of ``2 * text`` random hex characters),
    a tool call and a reward, all on night ``night``: one span file ``otel/traces-night-NN.jsonl``."""
    spans = []
    for r in range(rollouts):
        tid, rid = os.urandom(16).hex(), os.urandom(8).hex()
        t = night * 86_400 * S + r * 10 * S
        spans.append(_span(tid, None, "invoke_agent calc", t, {"gen_ai.operation.name": "invoke_agent",
                                                              "gen_ai.agent.name": "calc",
                                                              "spanrl.rollout_id": f"n{night}-r{r}"}, sid=rid))
        for i in range(calls):
            content = f"night {night} rollout {r} call {i}: " + os.urandom(text).hex()
            msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": content}]}])
            out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "answer " + content}],
                               "finish_reason": "stop"}])
            spans.append(_span(tid, rid, "chat m", t + i * S, {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
                "gen_ai.response.id": f"resp-{night}-{r}-{i}", "gen_ai.input.messages": msgs,
                "gen_ai.output.messages": out}))
        spans.append(_span(tid, rid, "execute_tool calc", t + calls * S, {"gen_ai.operation.name": "execute_tool",
                                                                         "gen_ai.tool.name": "calc"}))
        spans.append(_span(tid, rid, "spanrl.reward", t + 8 * S, {"spanrl.reward": float(r % 2),
                                                                  "spanrl.task_id": f"task-{r % 5}"}))
    line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "calc")]},
                                          "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
    otel.mkdir(parents=True, exist_ok=True)
    path = otel / f"traces-night-{night:02d}.jsonl"
    path.write_text(line + "\n")
    return path
