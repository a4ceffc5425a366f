"""The demo's agent (examples/calc_agent, which imports no spanrl) and its task files: where it
lives, the environment it runs with (only the standard OTel/OpenAI variables), and how its rollouts
run: through `spanrl rollout` (``spanrl.rollout.run_rollouts``), one agent process per (task, sample)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import Progress

from spanrl.demo.config import EVAL_AGENT, TRAIN_AGENT, VAL_AGENT, DemoConfig
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


# The standard OpenAI/OTel variables the demo adds for its agent; `spanrl rollout` sets the rest per
# process (OTEL_EXPORTER_OTLP_ENDPOINT, OPENAI_BASE_URL, OTEL_RESOURCE_ATTRIBUTES with the ids).
AGENT_ENV = {
    "OPENAI_API_KEY": "spanrl-demo",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_SERVICE_NAME": "calc-agent",
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
}
AGENT_NAMES = {"train": TRAIN_AGENT, "eval": EVAL_AGENT, "val": VAL_AGENT}
ATTEMPT_TIMEOUT_S = 3600.0  # a busy CPU server queues requests; only a hung agent should hit this


@dataclass
class Phase:
    """One rollout phase of a cycle: a split's tasks, where its result lines go, and the adapter
    it runs (``model``: a candidate loaded by name; None: what the server serves)."""

    split: str
    tasks: Path
    out: Path
    model: str | None = None

    @property
    def label(self) -> str:
        return f"{self.split}-candidate" if self.model else self.split


def task_lines(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calculator's tasks as `spanrl rollout` reads them (``input``, ``expected``) and the
    agent reads them (``question``, ``answer``): one file for both."""
    return [{**t, "input": t["question"], "expected": t["answer"]} for t in tasks]


def agent_command(phase: Phase, cfg: DemoConfig) -> list[str]:
    """The unmodified agent, one task per process (``{task_id}`` is the runner's placeholder).

    Only ``train`` rollouts run under the agent name that ingest keeps (``--agent ^calc$``);
    held-out and validation rollouts are in the lake but never in a training snapshot.
    """
    train = phase.split == "train"
    cmd = [sys.executable, str(agent_dir() / "agent.py"), "--tasks", str(phase.tasks), "--task-id", "{task_id}",
           "--split", phase.split, "--agent-name", AGENT_NAMES[phase.split],
           "--temperature", str(cfg.temperature if train or cfg.eval_temperature is None else cfg.eval_temperature),
           "--max-tokens", str(cfg.max_tokens)]
    return cmd + (["--model", phase.model] if phase.model is not None else [])


def run_phases(phases: list[Phase], cfg: DemoConfig, run_prefix: str, otlp: str, policy_url: str,
               progress: Progress) -> None:
    """Each phase is one `spanrl rollout` run (``<run_prefix>-<label>``), all at once so the server
    batches across phases; each phase's result lines land in ``phase.out`` (written whole, at the end).

    The agent prints its result line on stdout; the runner keeps each attempt's stdout and stderr
    under ``DATA/runs/<run_id>/logs``. A phase where no rollout finished stops the demo.
    """
    errors: list[BaseException] = []

    def one(phase: Phase) -> None:
        try:
            run_phase(phase, cfg, f"{run_prefix}-{phase.label}", otlp, policy_url, progress)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(p,), daemon=True) for p in phases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run_phase(phase: Phase, cfg: DemoConfig, run_id: str, otlp: str, policy_url: str, progress: Progress) -> None:
    from spanrl.rollout import RolloutConfig, run_rollouts

    train = phase.split == "train"
    rcfg = RolloutConfig(tasks=phase.tasks, n=cfg.rollouts_per_task if train else 1, command=agent_command(phase, cfg),
                         data=cfg.data, policy_url=policy_url, otlp=otlp, concurrency=cfg.concurrency,
                         timeout_s=ATTEMPT_TIMEOUT_S, retries=0, run_id=run_id, env=AGENT_ENV)
    bar = progress.add_task(f"{run_id}: {phase.label} rollouts", total=None)
    summary = run_rollouts(rcfg, on_plan=lambda total: progress.update(bar, total=total),
                           on_done=lambda _att: progress.advance(bar))
    rows = result_rows(summary.run_dir, phase.split)
    if summary.samples_ok == 0:
        first = summary.failures[0] if summary.failures else None
        raise RuntimeError(f"no {phase.label} rollout finished (run {run_id}); see {summary.run_dir}/logs"
                           + (f"\n{first.stderr_tail}" if first else ""))
    write_jsonl(phase.out.with_suffix(".jsonl.part"), rows).rename(phase.out)  # whole or absent


def result_rows(run_dir: Path | None, split: str) -> list[dict[str, Any]]:
    """One result line per rollout of a run: the agent's stdout line, under the runner's rollout id;
    an attempt that printed none (crash, timeout) is a rollout without reward, its stderr tail as error."""
    from spanrl.rollout.runs import RunLog

    assert run_dir is not None
    log = RunLog(run_dir.parents[1], run_dir.name)
    rows = []
    for end in (e for e in log.events if e.get("event") == "end"):
        stdout = log.log_paths(end["rollout_id"])[1]
        lines = stdout.read_text(errors="replace").splitlines() if stdout.is_file() else []
        try:
            row = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            row = {"task_id": end["task_id"], "split": split, "reward": None,
                   "error": (end.get("stderr_tail") or end.get("status") or "no output")[-300:]}
        rows.append({**row, "rollout_id": end["rollout_id"]})
    return rows
