"""Record the AIR corpus (run by hand when a library or a scenario changes; no network needed):

    .venv/bin/python tests/data/air_corpus/record.py [SCENARIO ...]

Runs every scenario of tests/helpers/air_agents.py (or the ones named) against the local fake
OpenAI server (tests/helpers/fake_openai.py, scripted through the user text) with the embedded
collector, one process per scenario, and writes what the collector received here:
traces.jsonl.zst (the collector's OTLP/JSON lines as one zstd stream, a span-file format spanrl ingest
reads as is: 890 KB of JSON is 32 KB; read it with ``zstd -dc``), logs.jsonl.zst when a run sent log
records, runs.json (scenario -> trace id, the error the run ended with) and versions.txt (the
libraries that produced the spans). Named scenarios replace their own runs only: the others' recorded
lines and runs are kept as they were.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import zstandard
from aiohttp import web

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.helpers import fake_responses  # noqa: E402
from tests.helpers.air_agents import SCENARIOS  # noqa: E402
from tests.helpers.collector import running_collector  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, script_step  # noqa: E402

LIBRARIES = ["langgraph", "langchain-core", "langchain-openai", "openai", "openai-agents", "pydantic-ai-slim",
             "openinference-instrumentation-langchain", "openinference-instrumentation-openai-agents",
             "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "opentelemetry-sdk"]


class ScriptedFake(FakeOpenAI):
    """The fake OpenAI server plus a scripted ``POST /v1/responses`` (not streamed): the Agents SDK's
    Responses model, whose OpenInference spans record the offered tools (its Chat Completions spans
    do not). The script is read as in chat mode: the items after the last user message, consecutive
    function calls as one assistant turn (their outputs end it); a step is tool calls or a text."""

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/responses", self._responses)

    async def _responses(self, request: web.Request) -> web.Response:
        body = await request.json()
        items = fake_responses.as_items(body.get("input"))
        turns: list[dict] = []
        for item in items:
            if item["type"] == "message":
                turns.append({"role": item.get("role"), "content": item.get("content")})
            elif item["type"] == "function_call" and (not turns or turns[-1].get("role") != "assistant"):
                turns.append({"role": "assistant"})
            elif item["type"] == "function_call_output":
                turns.append({"role": "tool"})
        with self._lock:
            n = len(self.exchanges) + 1
            resp, _ = fake_responses.reply(dict(body, tools=[]), [], n)  # the shape; output replaced below
            resp["tools"] = body.get("tools") or []
            step = script_step(turns)
            if isinstance(step, str):
                resp["output"] = [{"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                                   "content": [{"type": "output_text", "text": step, "annotations": []}]}]
            elif isinstance(step, list):
                resp["output"] = [{"type": "function_call", "id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}",
                                   "name": c["name"], "status": "completed",
                                   "arguments": c["arguments"] if isinstance(c["arguments"], str)
                                   else json.dumps(c["arguments"])} for i, c in enumerate(step)]
            self.exchanges.append((body, resp))
        return web.json_response(resp)


def main() -> None:
    names = sys.argv[1:] or sorted(SCENARIOS)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with ScriptedFake() as fake, running_collector(data) as ep:
            env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=ep.http, PYTHONPATH=str(ROOT))

            def run(name: str) -> dict:
                out = subprocess.run([sys.executable, str(ROOT / "tests" / "helpers" / "air_agents.py"),
                                      "--scenario", name, "--base-url", fake.url],
                                     env=env, capture_output=True, text=True, timeout=180)
                if out.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
                return json.loads(out.stdout.strip().splitlines()[-1])

            with ThreadPoolExecutor(2) as pool:
                runs = list(pool.map(run, names))
        old_runs = json.loads((HERE / "runs.json").read_text()) if sys.argv[1:] and (HERE / "runs.json").is_file() else {}
        replaced = {r["trace_id"] for name, r in old_runs.items() if name in names or name not in SCENARIOS}
        for kind in ("traces", "logs"):
            lines = [line for f in sorted((data / "otel").glob(f"{kind}*.jsonl")) for line in f.read_text().splitlines()]
            if old_runs and (HERE / f"{kind}.jsonl.zst").is_file():  # keep the scenarios not named
                kept = zstandard.ZstdDecompressor().stream_reader(io.BytesIO((HERE / f"{kind}.jsonl.zst").read_bytes())).read()
                lines = [x for line in kept.decode().splitlines() if (x := without_traces(line, replaced))] + lines
            (HERE / f"{kind}.jsonl.zst").unlink(missing_ok=True)
            if lines:
                text = "".join(line + "\n" for line in lines).encode()
                (HERE / f"{kind}.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=19).compress(text))
    runs_by_name = {**{n: r for n, r in old_runs.items() if n in SCENARIOS}, **{r["scenario"]: r for r in runs}}
    (HERE / "runs.json").write_text(json.dumps(runs_by_name, indent=1, sort_keys=True) + "\n")
    (HERE / "versions.txt").write_text("".join(f"{lib}=={version(lib)}\n" for lib in LIBRARIES))
    for r in runs:
        print(f"{r['scenario']:36} {r['trace_id']} {r['error'] or ''}")


def without_traces(line: str, trace_ids: set[str]) -> str | None:
    """A recorded request line less the spans / log records of TRACE_IDS (None when nothing is left;
    the line as it was when it holds none of them)."""
    if not line.strip():
        return None
    req = json.loads(line)
    hit = False
    for res_key, scope_key, item_key in (("resourceSpans", "scopeSpans", "spans"), ("resourceLogs", "scopeLogs", "logRecords")):
        for res in req.get(res_key) or []:
            for scope in res.get(scope_key) or []:
                items = scope.get(item_key) or []
                scope[item_key] = [x for x in items if x.get("traceId") not in trace_ids]
                hit |= len(scope[item_key]) != len(items)
            res[scope_key] = [sc for sc in res.get(scope_key) or [] if sc.get(item_key)]
        if res_key in req:
            req[res_key] = [r for r in req[res_key] if r.get(scope_key)]
    if not hit:
        return line
    return json.dumps(req, separators=(",", ":")) if req.get("resourceSpans") or req.get("resourceLogs") else None


if __name__ == "__main__":
    main()
