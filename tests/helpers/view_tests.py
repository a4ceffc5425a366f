"""Expected-rows tests for the lake views, in the shape of DuckDB's own ``.test`` files.

A file ``tests/data/views/<view>/<case>.test`` holds fixture telemetry and queries with the rows they
must return; ``tests/query/test_view_rows.py`` runs every file. Blocks are separated by blank lines,
``#`` lines are comments (the first two name and describe the case)::

    # name: llm_calls/openllmetry
    # description: OpenLLMetry <= 0.54 flattened attributes become OpenAI chat messages

    spans
    {"trace": "t1", "span": "s1", "name": "openai.chat", "kind": "CLIENT", "attributes": {"llm.request.type": "chat"}}

    logs
    {"trace": "t1", "span": "s1", "event": "gen_ai.user.message", "body": {"content": "hi"}}

    config
    [ingest]
    reward_keys = ["eval.score"]

    query II
    SELECT convention, input_messages FROM llm_calls ORDER BY span_id
    ----
    openllmetry	[{"role":"user","content":"hi"}]

``spans`` / ``logs`` lines are JSON objects (keys below) written as OTLP/JSON lines the way the
collector writes them, then ingested by the real loader; ``config`` is ``DATA/spanrl.toml``. Ids are
short names (``t1``, ``s1``): they are padded to OTLP lengths on the way in and shown short on the
way out. ``query`` is followed by one ``I`` per column (checked); its rows are tab-separated, NULL for
a missing value, JSON compact as DuckDB writes it, lists as JSON, booleans ``true``/``false``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.ingest.otlp_lines import T0, key_values, log_line, log_record, span, trace_line, write_lines

SPAN_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
SPAN_KEYS = {"trace", "span", "parent", "name", "kind", "start", "dur", "status", "status_message", "service",
             "scope", "scope_version", "attributes", "events", "resource"}
LOG_KEYS = {"trace", "span", "event", "body", "attributes", "time", "service", "scope"}


@dataclass
class Query:
    sql: str
    columns: int
    expected: list[str]
    line: int


@dataclass
class ViewTest:
    path: Path
    name: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    config: str = ""
    queries: list[Query] = field(default_factory=list)


def parse_view_test(path: Path) -> ViewTest:
    """Read one ``.test`` file; a malformed one fails with its file and line."""
    test = ViewTest(path)
    lines = path.read_text().splitlines()
    i = 0

    def fail(msg: str) -> None:
        raise ValueError(f"{path}:{i + 1}: {msg}")

    while i < len(lines):
        line = lines[i]
        if line.startswith("# name:"):
            test.name = line.split(":", 1)[1].strip()
        if not line.strip() or line.startswith("#"):
            i += 1
            continue
        head, start = line.split(), i
        i += 1
        block: list[str] = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
        if head[0] in ("spans", "logs"):
            for j, text in enumerate(block):
                try:
                    obj = json.loads(text)
                except ValueError as exc:
                    i = start + 1 + j
                    fail(f"not a JSON object: {exc}")
                unknown = set(obj) - (SPAN_KEYS if head[0] == "spans" else LOG_KEYS)
                if unknown:
                    i = start + 1 + j
                    fail(f"unknown keys {sorted(unknown)}")
                getattr(test, head[0]).append(obj)
        elif head[0] == "config":
            test.config += "\n".join(block) + "\n"
        elif head[0] == "query" and len(head) == 2 and set(head[1]) == {"I"}:
            if "----" not in block:
                fail("a query needs a '----' line before its expected rows")
            cut = block.index("----")
            test.queries.append(Query("\n".join(block[:cut]), len(head[1]), block[cut + 1:], start + 1))
        else:
            i = start
            fail(f"unknown block {line!r}: use spans, logs, config or query I..I")
    if not test.name:
        raise ValueError(f"{path}: the first line must be '# name: <view>/<case>'")
    return test


def _pad(short: str, n: int) -> str:
    if len(short) > n:
        raise ValueError(f"id {short!r} is longer than {n} characters")
    return short + "_" * (n - len(short))


def write_telemetry(test: ViewTest, data: Path) -> dict[str, str]:
    """The test's spans and logs as span files under ``data/otel`` (+ ``spanrl.toml``); returns
    {padded id: short id} for showing results."""
    ids: dict[str, str] = {}

    def pid(short: str | None, n: int) -> str | None:
        if short is None:
            return None
        ids[_pad(short, n)] = short
        return _pad(short, n)

    trace_lines = []
    for s in test.spans:
        kind = s.get("kind", 1)
        status = s.get("status", 0)
        sp = span(s.get("name", "span"), pid(s["trace"], 32), pid(s["span"], 16), parent=pid(s.get("parent"), 16),
                  attrs=s.get("attributes"), kind=SPAN_KINDS[kind] if isinstance(kind, str) else kind,
                  start=T0 + s.get("start", 0), dur=s.get("dur", 1_000_000),
                  status=STATUS[status] if isinstance(status, str) else status,
                  status_message=s.get("status_message", ""),
                  events=[(e["name"], e.get("attributes", {})) for e in s.get("events", [])])
        line = json.loads(trace_line([sp], service=s.get("service", "agent"), scope=s.get("scope", "tests")))
        scope = line["resourceSpans"][0]["scopeSpans"][0]["scope"]
        if "scope_version" in s:
            scope["version"] = s["scope_version"]
        if "resource" in s:
            line["resourceSpans"][0]["resource"]["attributes"] += key_values(s["resource"])
        trace_lines.append(json.dumps(line, separators=(",", ":")))
    if trace_lines:
        write_lines(data / "otel" / "traces.jsonl", trace_lines)
    log_lines = [log_line([log_record(lg["event"], lg.get("body"), pid(lg.get("trace"), 32), pid(lg.get("span"), 16),
                                      T0 + lg.get("time", 0), attrs=lg.get("attributes"))],
                          service=lg.get("service", "agent"), scope=lg.get("scope", "tests")) for lg in test.logs]
    if log_lines:
        write_lines(data / "otel" / "logs.jsonl", log_lines)
    if test.config:
        (data / "spanrl.toml").write_text(test.config)
    return ids


def show_value(v: Any, ids: dict[str, str]) -> str:
    """One result cell as the expected-rows text writes it."""
    def short(x: Any) -> Any:
        if isinstance(x, str):
            return ids.get(x, x)
        if isinstance(x, list):
            return [short(y) for y in x]
        if isinstance(x, dict):
            return {k: short(y) for k, y in x.items()}
        return x

    v = short(v)
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:g}"
    if isinstance(v, (list, dict)):
        text = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    else:
        text = str(v)
    # ids inside JSON text (tool_call ids are the model's, span ids are ours)
    text = re.sub(r"\b([a-z0-9]+)_{2,}\b", lambda m: ids.get(m.group(0), m.group(0)), text)
    return text.replace("\t", "\\t").replace("\n", "\\n")
