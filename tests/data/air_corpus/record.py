"""Record the AIR corpus (run by hand when a library or a scenario changes; no network needed):

    .venv/bin/python tests/data/air_corpus/record.py [SCENARIO ...]

Runs every scenario of tests/helpers/air_agents.py (or the ones named) against the local fake
OpenAI server (tests/helpers/fake_openai.py, scripted through the user text) with the embedded
collector, one process per scenario, and writes what the collector received here:
traces.jsonl.zst (the collector's OTLP/JSON lines as one zstd stream, a span-file format spanrl ingest
reads as is: 700 KB of JSON is 26 KB; read it with ``zstd -dc``), logs.jsonl.zst when a run sent log
records, runs.json (scenario -> trace id, the error the run ended with) and versions.txt (the
libraries that produced the spans).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import zstandard

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.helpers.air_agents import SCENARIOS  # noqa: E402
from tests.helpers.collector import running_collector  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI  # noqa: E402

LIBRARIES = ["langgraph", "langchain-core", "langchain-openai", "openai", "openai-agents", "pydantic-ai-slim",
             "openinference-instrumentation-langchain", "openinference-instrumentation-openai-agents",
             "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "opentelemetry-sdk"]


def main() -> None:
    names = sys.argv[1:] or sorted(SCENARIOS)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with FakeOpenAI() as fake, running_collector(data) as ep:
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
        for kind in ("traces", "logs"):
            lines = [line for f in sorted((data / "otel").glob(f"{kind}*.jsonl")) for line in f.read_text().splitlines()]
            (HERE / f"{kind}.jsonl.zst").unlink(missing_ok=True)
            if lines:
                text = "".join(line + "\n" for line in lines).encode()
                (HERE / f"{kind}.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=19).compress(text))
    (HERE / "runs.json").write_text(json.dumps({r["scenario"]: r for r in runs}, indent=1, sort_keys=True) + "\n")
    (HERE / "versions.txt").write_text("".join(f"{lib}=={version(lib)}\n" for lib in LIBRARIES))
    for r in runs:
        print(f"{r['scenario']:36} {r['trace_id']} {r['error'] or ''}")


if __name__ == "__main__":
    main()
