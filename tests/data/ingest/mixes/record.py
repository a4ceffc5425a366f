"""Record the instrumentation mixes of issue 42, once, by hand (no network; about a minute):

    .venv/bin/pip install logfire    # the Pydantic AI mix only (not a project dependency: the recording is kept)
    .venv/bin/python tests/data/ingest/mixes/record.py

Each scenario is an unmodified agent of tests/rollout run by ``spanrl rollout`` against the local fake
OpenAI server (tests/helpers/fake_openai.py, scripted answers), through the runner's own collector, into
a data root of its own; its span files land in ``mixes/<scenario>/`` with ``exchanges.json`` (what the
fake server saw) and ``scenario.json`` (the command, the environment, the script). Every zero-code
scenario runs under ``opentelemetry-instrument`` with every installed instrumentor (OpenInference OpenAI
Agents, OpenInference OpenAI and LangChain, OpenLLMetry, the official GenAI OpenAI instrumentation).
tests/ingest/test_mixes.py reads them; tests/helpers/mutate.py mutates them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT))

from tests.helpers.fake_openai import FakeOpenAI  # noqa: E402

PY = sys.executable
INSTRUMENT = str(Path(PY).parent / "opentelemetry-instrument")
AGENTS = ROOT / "tests" / "rollout"
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
ADD = [{"name": "add", "arguments": {"a": 2, "b": 3}}]
# the other instrumentors keep content off their spans, so the GenAI instrumentation's carrier is the only one
HIDDEN = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true", "TRACELOOP_TRACE_CONTENT": "false"}
# scenario -> (command after --, environment, script of the model's answers per attempt)
SCENARIOS = {
    # the crash of issue 42: the handoff's {} arguments, OpenInference Agents + the GenAI instrumentation
    "agents-sdk-handoff": ([INSTRUMENT, PY, str(AGENTS / "handoff_agent.py")],
                           {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"},
                           [[{"name": "transfer_to_math_agent", "arguments": {}}], ADD, "The answer is 5."]),
    "parallel-tools": ([INSTRUMENT, PY, str(AGENTS / "tool_loop_agent.py")],
                       {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
                       [[*ADD, {"name": "add", "arguments": {"a": 1, "b": 1}}], "5 and 2"]),
    "streamed": ([INSTRUMENT, PY, str(AGENTS / "tool_loop_agent.py"), "--stream"],
                 {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
                 [ADD, "The answer is 5."]),
    # content on the GenAI operation-details event only (an OTel log record), none on any span
    "content-log-record-only": ([INSTRUMENT, PY, str(AGENTS / "tool_loop_agent.py")],
                            {**LATEST, **HIDDEN, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
                            [ADD, "The answer is 5."]),
    # content captured nowhere: OpenInference writes __REDACTED__, OpenLLMetry nothing, and the GenAI
    # instrumentation of these versions knows no mode "true" (it needs SPAN_ONLY...): counted, never a prompt
    "content-hidden": ([INSTRUMENT, PY, str(AGENTS / "tool_loop_agent.py")],
                            {**HIDDEN, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
                            [ADD, "The answer is 5."]),
    # LangGraph's ReAct agent (examples/langgraph_agent, unmodified): ChatOpenAI runs in LangGraph's worker
    # thread, so the OpenAI instrumentations' spans may land in a trace of their own, apart from OpenInference
    # LangChain's record of the same request, which names the response id only inside LangChain's output
    "langgraph-react": ([INSTRUMENT, PY, str(ROOT / "examples" / "langgraph_agent" / "agent.py")],
                        {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
                        [[{"name": "calculator", "arguments": {"expression": "2 + 3"}}], "5"]),
    # Pydantic AI traced by Logfire's OpenTelemetry (no opentelemetry-instrument: Logfire is the tracer)
    "pydantic-ai-logfire": ([PY, str(AGENTS / "logfire_agent.py")], {}, [ADD, "The answer is 5."]),
}
TASKS = 2  # attempts per scenario, one task each


def record(name: str, command: list[str], env: dict[str, str], script: list) -> None:
    tmp = Path(tempfile.mkdtemp())
    data = tmp / "data"
    tasks = tmp / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": f"{name}-{i}", "expected": "5",
                                         "input": f"what is 2+3 (#{i})? fake-script:{json.dumps(script)}"}) + "\n"
                             for i in range(TASKS)))
    with FakeOpenAI() as fake:
        run = subprocess.run([PY, "-m", "spanrl", "rollout", "--data", str(data), "--tasks", str(tasks), "--n", "1",
                              "--policy-url", fake.url, "--timeout", "120s", "--score",
                              f"{PY} {AGENTS / 'scorer.py'}", "--", *command],
                             env={**os.environ, "OTEL_SERVICE_NAME": name, **env}, capture_output=True, text=True)
        exchanges = list(fake.exchanges)
    if run.returncode != 0:
        raise SystemExit(f"{name}: spanrl rollout failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for f in sorted((data / "otel").glob("*.jsonl")):
        shutil.copy(f, out / f.name)
    (out / "exchanges.json").write_text(json.dumps(exchanges, indent=1))
    (out / "scenario.json").write_text(json.dumps({"command": [Path(c).name for c in command], "env": env,
                                                   "script": script, "attempts": TASKS}, indent=1))
    shutil.rmtree(tmp)
    print(f"{name}: {len(exchanges)} model requests recorded")


def main() -> None:
    only = set(sys.argv[1:])
    for name, (command, env, script) in SCENARIOS.items():
        if not only or name in only:
            record(name, command, env, script)
    versions = subprocess.run([PY, "-m", "pip", "list"], capture_output=True, text=True).stdout.splitlines()
    keep = ("openinference-", "opentelemetry-", "openai", "logfire", "pydantic-ai", "langchain", "langgraph")
    (HERE / "versions.txt").write_text("\n".join(v for v in versions if v.lower().startswith(keep)) + "\n")


if __name__ == "__main__":
    main()
