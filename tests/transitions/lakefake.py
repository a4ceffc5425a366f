"""Hand-built lakes for stage-2 edge cases: spans with the docs/lake.md columns, plus llm_calls and
tool_calls rows with the docs/lake.md columns, registered on a DuckDB connection the builder accepts.

Real-instrumentation tests (test_build_real.py) go through stage 1 instead; these cover shapes that
are awkward to produce with a real SDK (orphans, clock edge cases, exotic reward encodings).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

SPAN_COLUMNS = ["trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns", "status_code",
                "status_message", "service_name", "resource", "scope_name", "scope_version", "attributes",
                "events", "links", "source_file", "ingested_at"]
LLM_COLUMNS = ["trace_id", "span_id", "parent_span_id", "start_ns", "end_ns", "service_name", "agent_name",
               "convention", "provider", "model", "input_messages", "output_message", "tools", "finish_reason",
               "input_tokens", "output_tokens", "prompt_token_ids", "response_token_ids", "response_logprobs",
               "temperature", "response_id", "status_code", "restored_messages", "merged_spans", "prompt_version"]
LOG_COLUMNS = ["trace_id", "span_id", "time_ns", "event_name", "attributes"]
TOOL_COLUMNS = ["trace_id", "span_id", "llm_span_id", "tool_name", "arguments", "result", "status_code",
                "error_type", "start_ns", "end_ns", "is_handoff"]

_ids = itertools.count(1)
T0 = 1_700_000_000_000_000_000


def new_id(width: int = 16) -> str:
    return f"{next(_ids):0{width}x}"


@dataclass
class FakeLake:
    """Accumulates rows; ``connect`` writes the spans to Parquet and registers the three relations."""

    data: Path
    spans: list[dict[str, Any]] = field(default_factory=list)
    llm: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)

    def span(self, trace_id: str, name: str, start: int, end: int, parent: str | None = None,
             attributes: dict | None = None, events: list | None = None, status: str = "UNSET",
             resource: dict | None = None, span_id: str | None = None, source_file: str = "otel/traces.jsonl",
             ingested_at: datetime | None = None) -> str:
        sid = span_id or new_id()
        self.spans.append({
            "trace_id": trace_id, "span_id": sid, "parent_span_id": parent, "name": name, "kind": "INTERNAL",
            "start_ns": T0 + start, "end_ns": T0 + end, "status_code": status, "status_message": None,
            "service_name": "agent", "resource": json.dumps(resource or {"service.name": "agent"}),
            "scope_name": "test", "scope_version": None, "attributes": json.dumps(attributes or {}),
            "events": json.dumps(events or []), "links": "[]", "source_file": source_file,
            "ingested_at": ingested_at or datetime(2020, 1, 1),  # before T0: the clock is the newest span end
        })
        return sid

    def llm_call(self, trace_id: str, start: int, end: int, parent: str | None, prompt: list[dict],
                 response: dict | None, agent: str | None = None, tools: list | None = None,
                 response_id: str | None = None, token_ids: tuple[list[int], list[int]] | None = None,
                 status: str = "UNSET", attributes: dict | None = None) -> str:
        sid = self.span(trace_id, "chat m", start, end, parent, attributes=attributes, status=status)
        self.llm.append({
            "trace_id": trace_id, "span_id": sid, "parent_span_id": parent, "start_ns": T0 + start,
            "end_ns": T0 + end, "service_name": "agent", "agent_name": agent, "convention": "test",
            "provider": "openai", "model": "m", "input_messages": json.dumps(prompt),
            "output_message": json.dumps(response) if response is not None else None,
            "tools": json.dumps(tools) if tools else None, "finish_reason": "stop", "input_tokens": 3,
            "output_tokens": 2, "prompt_token_ids": token_ids[0] if token_ids else None,
            "response_token_ids": token_ids[1] if token_ids else None,
            "response_logprobs": [-0.5] * len(token_ids[1]) if token_ids else None,
            "temperature": 0.7, "response_id": response_id, "status_code": status, "restored_messages": 0,
            "merged_spans": [], "prompt_version": None,
        })
        return sid

    def tool_call(self, trace_id: str, start: int, end: int, parent: str | None, llm_span_id: str | None,
                  name: str, arguments: str | None, result: str | None = "ok", status: str = "UNSET",
                  events: list | None = None) -> str:
        sid = self.span(trace_id, f"execute_tool {name}", start, end, parent, status=status, events=events,
                        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name})
        self.tools.append({
            "trace_id": trace_id, "span_id": sid, "llm_span_id": llm_span_id, "tool_name": name,
            "arguments": arguments, "result": result, "status_code": status,
            "error_type": "ValueError" if status == "ERROR" else None, "start_ns": T0 + start, "end_ns": T0 + end,
        })
        return sid

    def log_event(self, trace_id: str, span_id: str | None, t: int, event_name: str, attributes: dict) -> None:
        self.logs.append({"trace_id": trace_id, "span_id": span_id, "time_ns": T0 + t, "event_name": event_name,
                          "attributes": json.dumps(attributes)})

    def connect(self) -> duckdb.DuckDBPyConnection:
        folder = self.data / "lake" / "spans" / "date=2023-11-14"
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.parquet"):
            old.unlink()
        table = pa.Table.from_pylist(self.spans)
        pq.write_table(table, folder / "part-0.parquet")
        con = duckdb.connect()
        con.execute(f"CREATE VIEW spans AS SELECT * FROM read_parquet('{folder}/*.parquet')")
        _register(con, "llm_calls", self.llm, LLM_COLUMNS,
                  {"prompt_token_ids": "INTEGER[]", "response_token_ids": "INTEGER[]",
                   "response_logprobs": "DOUBLE[]", "temperature": "DOUBLE", "input_tokens": "BIGINT",
                   "output_tokens": "BIGINT", "start_ns": "BIGINT", "end_ns": "BIGINT",
                   "restored_messages": "INTEGER", "merged_spans": "STRUCT(trace_id VARCHAR, span_id VARCHAR)[]"})
        _register(con, "tool_calls", self.tools, TOOL_COLUMNS, {"start_ns": "BIGINT", "end_ns": "BIGINT",
                                                                 "is_handoff": "BOOLEAN"})
        _register(con, "logs", self.logs, LOG_COLUMNS, {"time_ns": "BIGINT", "attributes": "JSON"})
        return con


def _register(con: duckdb.DuckDBPyConnection, name: str, rows: list[dict], columns: list[str],
              types: dict[str, str]) -> None:
    cols = ", ".join(f'"{c}" {types.get(c, "VARCHAR")}' for c in columns)
    con.execute(f"CREATE TABLE {name} ({cols})")
    if rows:
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in columns)})",
                        [[r.get(c) for c in columns] for r in rows])


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def sample_lake(data: Path, n_tasks: int = 3, repeats: int = 4) -> FakeLake:
    """A small, deterministic lake: ``n_tasks`` tasks x ``repeats`` rollouts, tools, AIR hits, rewards."""
    global _ids
    _ids = itertools.count(1)  # same ids every time: two calls build byte-identical lakes
    lake = FakeLake(Path(data))
    tools = [{"type": "function", "function": {"name": "calc", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}]
    for task in range(n_tasks):
        for rep in range(repeats):
            tr = f"{task:016x}{rep:016x}"
            t = (task * repeats + rep) * 100_000
            root = lake.span(tr, "invoke_agent solver", t, t + 50_000, span_id=f"{task:08x}{rep:04x}0000",
                             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "solver"})
            ask = lake.llm_call(tr, t + 10, t + 100, root, [user(f"task {task}")],
                                {"role": "assistant", "content": None, "tool_calls": [
                                    {"id": "c1", "type": "function",
                                     "function": {"name": "calc", "arguments": '{"x": 1}'}}]},
                                agent="solver", tools=tools, token_ids=([1, 2, 3], [4, 5]))
            lake.tool_call(tr, t + 110, t + 150, root, ask, "calc", '{"x": 1}' if rep % 2 else '{"x": "a"}',
                           status="ERROR" if rep == 3 else "UNSET")
            lake.llm_call(tr, t + 200, t + 300, root, [user(f"task {task}"), assistant("tool said 1")],
                          assistant(f"answer {rep}"), agent="solver")
            lake.span(tr, "spanrl.reward", t + 400, t + 400, root,
                      attributes={"spanrl.reward": float((task + rep) % 2)})
    return lake


if __name__ == "__main__":  # used by the crash tests: build the sample lake's snapshot in a subprocess
    import sys

    from spanrl.transitions.build import build_transitions
    from spanrl.transitions.config import make_ingest_config

    lake = sample_lake(Path(sys.argv[1]))
    result = build_transitions(make_ingest_config(data=lake.data, settle_s=0), con=lake.connect())
    print(result.status, result.snapshot_id)
