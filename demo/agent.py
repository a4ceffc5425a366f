"""The demo's agent (examples/calc_agent, which imports no spanrl) and its task files: where it
lives, the environment it runs with (only the standard OTel/OpenAI variables), and its processes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from rich.progress import Progress

from spanrl.demo.config import EVAL_AGENT, TRAIN_AGENT, VAL_AGENT, DemoConfig
from spanrl.demo.procs import stop_group, tail
from spanrl.errors import InputError


def agent_dir() -> Path:
    """examples/calc_agent beside the package (editable install), or $SPANRL_DEMO_AGENT."""
    folder = Path(os.environ.get("SPANRL_DEMO_AGENT") or Path(__file__).resolve().parents[1] / "examples" / "calc_agent")
    if not (folder / "agent.py").is_file():
        raise InputError(f"the demo agent is not at {folder}: run from a source checkout or set SPANRL_DEMO_AGENT")
    return folder


def load_task_module() -> Any:
    """examples/calc_agent/tasks.py, loaded by path (the examples are not a package)."""
    spec = importlib.util.spec_from_file_location("calc_agent_tasks", agent_dir() / "tasks.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def mean_reward(rows: list[dict[str, Any]], key: str = "reward") -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def agent_env(serve_port: int, otlp_port: int) -> dict[str, str]:
    """Only standard variables: the OpenAI SDK's and OpenTelemetry's."""
    return {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{serve_port}/v1",
        "OPENAI_API_KEY": "spanrl-demo",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{otlp_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "calc-agent",
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    }


AGENT_NAMES = {"train": TRAIN_AGENT, "eval": EVAL_AGENT, "val": VAL_AGENT}


def start_agent(tasks: Path, out: Path, split: str, cfg: DemoConfig, env: dict[str, str], run_id: str,
                log_dir: Path, model: str | None = None, log_name: str | None = None) -> subprocess.Popen:
    """One agent process running every rollout of a task file concurrently (stderr -> agent-SPLIT.log).

    Only ``train`` rollouts run under the agent name that ingest keeps (``--agent ^calc$``);
    held-out and validation rollouts are in the lake but never in a training snapshot. ``model``
    names a loaded adapter (a candidate being validated) instead of what the server serves.
    """
    train = split == "train"
    cmd = [sys.executable, str(agent_dir() / "agent.py"), "--tasks", str(tasks), "--out", str(out),
           "--split", split, "--agent-name", AGENT_NAMES[split], "--run-id", run_id,
           "--rollouts", str(cfg.rollouts_per_task if train else 1),
           "--temperature", str(cfg.temperature if train or cfg.eval_temperature is None else cfg.eval_temperature),
           "--max-tokens", str(cfg.max_tokens), "--concurrency", str(cfg.concurrency)]
    if model is not None:
        cmd += ["--model", model]
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"agent-{log_name or split}.log", "ab") as log:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)


def run_agents(jobs: list[tuple[str, subprocess.Popen, int]], progress: Progress, log_dir: Path) -> None:
    """Follow the agents' ``done`` lines on progress bars; fail if one exits non-zero."""

    def follow(label: str, proc: subprocess.Popen, total: int) -> None:
        bar = progress.add_task(label, total=total)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("done "):
                progress.advance(bar)

    threads = [threading.Thread(target=follow, args=job, daemon=True) for job in jobs]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()  # stdout closes when the agent exits
        for label, proc, _ in jobs:
            if proc.wait() != 0:
                split = label.rsplit(" ", 2)[-2]
                log = log_dir / f"agent-{split}.log"
                raise RuntimeError(f"agent ({label}) exited with {proc.returncode}; see {log}\n{tail(log)}")
    finally:
        for _, proc, _ in jobs:
            stop_group(proc)
        for t in threads:
            t.join(5)
