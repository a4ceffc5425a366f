"""A data root with span files of finished rollouts (GenAI semconv >= 1.37 attributes), grouped by task,
none with a reward: what `spanrl rollout` leaves behind for `spanrl judge`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ingest.otlp_lines import T0, key_values, new_span_id, new_trace_id, span

SYSTEM = "You are a calculator."


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def rollout_line(rollout_id: str, task_id: str, question: str, answer: str, start: int,
                 history: tuple[tuple[str, str], ...] = ()) -> str:
    """One OTLP/JSON line: an agent span and one chat call, ids in the resource (as the runner sets them);
    ``history``: worked examples (question, answer) the agent keeps in its conversation before the task."""
    tid, root = new_trace_id(), new_span_id()
    messages = [_text("system", SYSTEM), *(m for q, a in history for m in (_text("user", q), _text("assistant", a))),
                _text("user", question)]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
    spans = [span("invoke_agent calc", tid, root, start=start, dur=3_000_000,
                  attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc"}),
             span("chat m", tid, new_span_id(), parent=root, start=start + 1_000, kind=3, attrs={
                 "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                 "gen_ai.input.messages": json.dumps(messages), "gen_ai.output.messages": json.dumps(out)})]
    resource = {"service.name": "calc", "spanrl.rollout_id": rollout_id, "spanrl.task_id": task_id}
    doc = {"resourceSpans": [{"resource": {"attributes": key_values(resource)},
                              "scopeSpans": [{"scope": {"name": "tests"}, "spans": spans}]}]}
    return json.dumps(doc, separators=(",", ":"))


def write_rollouts(data: Path, rollouts: list[tuple[str, str, str, str]], name: str = "traces.jsonl",
                   history: tuple[tuple[str, str], ...] = ()) -> None:
    """(rollout_id, task_id, question, answer) each, one line per rollout, into DATA/otel/<name>."""
    lines = [rollout_line(r, t, q, a, T0 + i * 10_000_000, history) for i, (r, t, q, a) in enumerate(rollouts)]
    path = data / "otel" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
