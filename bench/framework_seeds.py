"""bench/framework_seeds: do unmodified framework agents learn? (issue 41's proof), resumable.

For each agent (``examples/langgraph_agent``, ``examples/agents_sdk_agent``), path and seed, in its own data
root ``ROOT/<agent>-<path>-s<seed>``:

- ``zero-code``: the agent under ``opentelemetry-instrument`` (every installed instrumentor), run by
  ``spanrl rollout --model M`` (the runner starts ``spanrl serve`` on the latest adapter);
- ``gateway``: the agent with no telemetry, pointed at ``spanrl gateway`` in front of ``spanrl serve``;

then per cycle ``spanrl ingest`` and ``spanrl train`` (the CLI's default recipe: nothing tuned per agent), and
at the end one ``spanrl eval`` of base against the last adapter on the held-out tasks (paired, 95 %). Every
finished step is a line of ``<root>/steps.jsonl``: a stopped run resumes at the first step not recorded. A
finished (agent, path, seed) appends one line to ``ROOT/results.jsonl``; ``ROOT/framework.md`` is the table
(agent, framework, path, base -> trained, paired difference and interval, verdict).

    .venv/bin/python bench/framework_seeds.py --root ./fw                        # 2 agents x 2 paths x seed 0
    .venv/bin/python bench/framework_seeds.py --root ./fw --agents langgraph_agent --paths gateway --seeds 0,1,2
    .venv/bin/python bench/framework_seeds.py --root /tmp/fw --quick --model /tmp/tiny   # plumbing check

Not part of the tests. One (agent, path, seed) with the defaults (3 cycles of 16 tasks x 4, 32 held-out tasks
x 2 samples x 2 policies) is about 1.5 hours on 2 free CPU cores with the bundled SmolLM2-135M.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SPANRL = [PY, "-m", "spanrl"]
INSTRUMENT = str(Path(PY).parent / "opentelemetry-instrument")
FRAMEWORK = {"langgraph_agent": "LangGraph (create_react_agent)", "agents_sdk_agent": "OpenAI Agents SDK (handoff)"}
MODEL_NAME = "gpt-4o-mini"  # what the examples ask for; the started servers answer to it
CAPTURE = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}


# A tool call that ran without error earns the call that asked for it this much (AIR, credited to that call):
# the calculator agent's 0.2 for "the tool ran", with no change to the agent (the spans show the tool ran).
TOOL_REWARD = """[ingest]
credit = "air"

[[air.rules]]
name = "tool_ran"
when = "is_tool AND span_id IS NOT NULL AND NOT is_error"
value = {value}
"""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(url: str, proc: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[3]} exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"{url} did not answer in {timeout:.0f} s")


def agent_cmd(agent: str, zero_code: bool) -> list[str]:
    script = str(ROOT / "examples" / agent / "agent.py")
    return [INSTRUMENT, PY, script] if zero_code else [PY, script]


# Without telemetry from outside (the gateway path, spanrl eval), the Agents SDK still exports its own traces
# to OpenAI's platform, which cannot be reached from here: 3 of 35 base eval attempts exited 1 after 10-13
# minutes of retries ("Tracing: max retries reached"). A user without that platform sets the SDK's documented
# switch; the agent's code is unchanged. (Under opentelemetry-instrument, 64 of 64 attempts showed no such error.)
PLAIN_ENV = {"agents_sdk_agent": {"OPENAI_AGENTS_DISABLE_TRACING": "1"}}


def score_cmd() -> str:
    return f"{PY} {ROOT / 'examples' / 'score_number.py'}"


def tasks_file(data: Path, name: str, split: str, n: int, seed: int) -> Path:
    path = data / f"{name}.jsonl"
    if not path.is_file():
        out = subprocess.run([PY, str(ROOT / "examples" / "arith_tasks.py"), split, str(n), "--seed", str(seed)],
                             capture_output=True, text=True, check=True).stdout
        path.write_text(out)
    return path


def run(cmd: list[str], data: Path, env: dict[str, str] | None = None) -> None:
    with open(data / "bench.log", "ab") as log:
        log.write(f"\n$ {' '.join(cmd)}\n".encode())
        log.flush()
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, **(env or {})}).returncode
    if code != 0:
        raise SystemExit(f"exited with {code}: {' '.join(cmd[:6])} ...; see {data / 'bench.log'} (re-run to resume)")


def rollouts(data: Path, agent: str, path: str, tasks: Path, n: int, model: Path) -> None:
    common = ["--data", str(data), "--tasks", str(tasks), "--n", str(n), "--score", score_cmd(), "--timeout", "900s"]
    if path == "zero-code":
        run([*SPANRL, "rollout", *common, "--model", str(model), "--served-model-name", MODEL_NAME, "--",
             *agent_cmd(agent, True)], data, {**CAPTURE, "OTEL_SERVICE_NAME": agent})
        return
    serve_port, gw_port = free_port(), free_port()
    adapter = ["--adapter", "LATEST"] if (data / "adapters" / "LATEST").is_file() else []
    with open(data / "bench.log", "ab") as log:
        serve = subprocess.Popen([*SPANRL, "serve", "--model", str(model), "--data", str(data), *adapter,
                                  "--port", str(serve_port), "--served-model-name", MODEL_NAME], stdout=log, stderr=log)
        gateway = subprocess.Popen([*SPANRL, "gateway", "--data", str(data), "--port", str(gw_port),
                                    "--upstream", f"http://127.0.0.1:{serve_port}/v1"], stdout=log, stderr=log)
    try:
        wait_health(f"http://127.0.0.1:{serve_port}/health", serve)
        wait_health(f"http://127.0.0.1:{gw_port}/health", gateway)
        run([*SPANRL, "rollout", *common, "--policy-url", f"http://127.0.0.1:{gw_port}/v1", "--",
             *agent_cmd(agent, False)], data, PLAIN_ENV.get(agent))
    finally:
        for proc in (gateway, serve):
            proc.terminate()
            proc.wait(timeout=120)


def one(agent: str, path: str, seed: int, a: argparse.Namespace) -> dict:
    data = (a.root / f"{agent}-{path}-s{seed}").resolve()
    data.mkdir(parents=True, exist_ok=True)
    done = {s["step"] for s in read_jsonl(data / "steps.jsonl")}
    started = time.monotonic()

    def step(name: str, fn) -> None:
        if name in done:
            return
        print(f"[{agent} {path} s{seed}] {name}", flush=True)
        t0 = time.monotonic()
        fn()
        with open(data / "steps.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": name, "seconds": round(time.monotonic() - t0, 1)}) + "\n")

    held = tasks_file(data, "heldout", "eval", a.heldout, 0)
    if a.tool_reward and not (data / "spanrl.toml").is_file():  # the demo's partial reward, from the spans alone
        (data / "spanrl.toml").write_text(TOOL_REWARD.format(value=a.tool_reward))
    for c in range(a.cycles):
        tasks = tasks_file(data, f"train-c{c}", "train", a.tasks_per_cycle, 100 * seed + c)
        step(f"c{c}-rollout", lambda t=tasks: rollouts(data, agent, path, t, a.group, a.model))
        step(f"c{c}-ingest", lambda: run([*SPANRL, "ingest", "--data", str(data), "--settle", "0s"], data))
        step(f"c{c}-train", lambda: run([*SPANRL, "train", "--data", str(data), "--model", str(a.model),
                                          "--no-progress", "--seed", str(seed)], data))
    out = data / "eval"
    step("eval", lambda: run([*SPANRL, "eval", "--data", str(data), "--tasks", str(held), "--model", str(a.model),
                              "--served-model-name", MODEL_NAME, "--policy", "base", "--policy", "LATEST",
                              "--n", str(a.eval_samples), "--score", score_cmd(), "--out", str(out),
                              "--timeout", "900s", "--",
                              *agent_cmd(agent, False)], data, PLAIN_ENV.get(agent)))
    doc = json.loads((out / "eval.json").read_text())
    (cmp,) = doc["comparisons"]
    base, trained = (doc["policies"][cmp[k]] for k in ("baseline", "candidate"))
    return {"agent": agent, "path": path, "seed": seed, "cycles": a.cycles, "heldout_tasks": a.heldout,
            "tool_reward": a.tool_reward,
            "samples": a.eval_samples, "base": base["mean"], "trained": trained["mean"], "comparison": cmp,
            "steps": read_jsonl(data / "steps.jsonl"), "wall_s_last_call": round(time.monotonic() - started, 1)}


def render(results: list[dict], out: Path) -> None:
    lines = ["| agent | framework | path | seed | base → trained (held-out) | paired difference [95 %] | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        c = r["comparison"]
        lo, hi = c["ci"]
        lines.append(f"| {r['agent']} | {FRAMEWORK.get(r['agent'], '?')} | {r['path']} | {r['seed']} | "
                     f"{r['base']:.3f} → {r['trained']:.3f} | {c['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                     f"{c['verdict']} |")
    (out / "framework.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("spanrl-framework-seeds"))
    ap.add_argument("--agents", default=",".join(FRAMEWORK))
    ap.add_argument("--paths", default="zero-code,gateway")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--model", type=Path, default=None, help="base model folder (default: the demo model)")
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--tasks-per-cycle", type=int, default=16)
    ap.add_argument("--group", type=int, default=4, help="rollouts per training task")
    ap.add_argument("--heldout", type=int, default=32)
    ap.add_argument("--eval-samples", type=int, default=2)
    ap.add_argument("--tool-reward", type=float, default=0.0,
                    help="an AIR rule rewarding a tool call that ran (credit air): a learning signal while no rollout is right")
    ap.add_argument("--quick", action="store_true", help="1 cycle of 2 tasks x 2, 2 held-out tasks x 1 (plumbing)")
    a = ap.parse_args()
    if a.quick:
        a.cycles, a.tasks_per_cycle, a.group, a.heldout, a.eval_samples = 1, 2, 2, 2, 1
    a.root.mkdir(parents=True, exist_ok=True)
    if a.model is None:  # the bundled SmolLM2, converted once into ROOT/models (what `--model demo` does)
        from spanrl.serve.models import prepare_demo_model

        a.model = prepare_demo_model(a.root.resolve())
    a.model = a.model.resolve()
    if not Path(INSTRUMENT).is_file():
        raise SystemExit(f"{INSTRUMENT} not found: install the dev extra (make install)")
    a.root.mkdir(parents=True, exist_ok=True)
    results_file = a.root / "results.jsonl"
    for seed in [int(s) for s in a.seeds.split(",")]:
        for agent in a.agents.split(","):
            for path in a.paths.split(","):
                if any((r["agent"], r["path"], r["seed"]) == (agent, path, seed) for r in read_jsonl(results_file)):
                    continue
                result = one(agent, path, seed, a)
                with open(results_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(result, sort_keys=True) + "\n")
    if read_jsonl(results_file):
        render(read_jsonl(results_file), a.root)


if __name__ == "__main__":
    main()
