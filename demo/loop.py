"""``spanrl demo``: the whole loop on one machine, every stage a real subprocess.

    collector (embedded) ◀─OTLP── calc agent ──HTTP──▶ spanrl serve (hot-reloads adapters/LATEST)
        │ span files
        ▼
    spanrl ingest ──▶ lake + transitions snapshot ──▶ spanrl train ──▶ adapters/<cycle>/ ──▶ serve

Cycle ``N`` means "the policy after N training cycles" (0 = the base model). For each cycle the
demo evaluates policy N on the fixed held-out split, collects training rollouts with it, ingests,
trains adapter N+1 and waits until the server serves it; a last evaluation scores the final policy.
Held-out rollouts run under the agent name ``calc-eval`` and ingest keeps only ``--agent ^calc$``
calls, so they are in the lake (queryable) but never in a training snapshot; the demo checks that.
Results land in ``DATA/eval/cycle-N.jsonl`` (held-out) and ``DATA/demo/rollouts/cycle-N.jsonl``
(training rollouts), written by the agent itself. Re-running continues the numbering.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from spanrl.demo.agent import (
    agent_env,
    load_task_module,
    mean_reward,
    read_jsonl,
    run_agents,
    start_agent,
    write_jsonl,
)
from spanrl.demo.config import TRAIN_AGENT, CycleResult, DemoConfig
from spanrl.demo.procs import (
    StepError,
    background,
    free_port,
    http_get,
    install_sigterm,
    port_open,
    run_step,
    spanrl_command,
    wait_until,
)
from spanrl.errors import InputError
from spanrl.trainer.adapter import adapters_dir, latest_adapter, read_cycles

# ----------------------------------------------------------------------------------------------
# the loop


class Demo:
    """Holds the ports, paths and services of one run; ``run()`` is the loop."""

    def __init__(self, cfg: DemoConfig, console: Console) -> None:
        self.cfg, self.console = cfg, console
        self.data = cfg.data.resolve()
        self.logs = self.data / "demo" / "logs"
        self.tasks = load_task_module()
        self.results: list[CycleResult] = []

    def first_cycle(self) -> int:
        """Cycles continue from the adapters already trained under this data root."""
        return len(read_cycles(adapters_dir(self.data)))

    def run(self) -> list[CycleResult]:
        self.data.mkdir(parents=True, exist_ok=True)
        model = self.cfg.model or self._prepare_model()
        otlp, grpc, serve = free_port(), free_port(), free_port()
        collector_cmd = spanrl_command("collector", "--embedded", "--data", str(self.data),
                                       "--http-port", str(otlp), "--grpc-port", str(grpc))
        serve_cmd = spanrl_command("serve", "--model", str(model), "--data", str(self.data),
                                   "--adapter", "LATEST", "--port", str(serve), "--max-batch", str(self.cfg.max_batch),
                                   "--otlp-endpoint", f"http://127.0.0.1:{otlp}")
        serve_env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "500"}  # its spans reach the files promptly
        with (
            background("collector", collector_cmd, self.logs) as collector,
            background("serve", serve_cmd, self.logs, serve_env) as server,
        ):
            self.console.print(f"[bold]collector[/] OTLP http://127.0.0.1:{otlp}   "
                               f"[bold]serve[/] http://127.0.0.1:{serve}/v1   logs {self.logs}")
            wait_until(lambda: port_open(otlp), "collector", collector, self.logs / "collector.log", 60)
            wait_until(lambda: http_get(f"http://127.0.0.1:{serve}/health")[0] == 200, "serve", server,
                       self.logs / "serve.log", 600)
            self.serve_url, self.env = f"http://127.0.0.1:{serve}", agent_env(serve, otlp)
            start = self.first_cycle()
            for cycle in range(start, start + self.cfg.cycles):
                self.results.append(self.cycle(cycle, model, server))
            self.results.append(self.evaluate_only(start + self.cfg.cycles))
        return self.results

    def _prepare_model(self) -> Path:
        from spanrl.serve.models import prepare_demo_model

        with self.console.status("preparing the demo model (SmolLM2-135M-Instruct, once per data root)"):
            return prepare_demo_model(self.data)

    def _progress(self) -> Progress:
        return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.console)

    def _task_files(self, cycle: int) -> tuple[Path, Path]:
        folder = self.data / "demo" / "tasks"
        train = write_jsonl(folder / f"train-cycle-{cycle}.jsonl", self.tasks.make_tasks("train", self.cfg.train_tasks, seed=cycle))
        held_out = write_jsonl(folder / "eval.jsonl", self.tasks.make_tasks("eval", self.cfg.eval_tasks))
        return train, held_out

    def _rollouts(self, cycle: int, progress: Progress, with_train: bool) -> CycleResult:
        """Held-out eval (and training rollouts) with the policy now served; files are renamed when whole."""
        train_tasks, eval_tasks = self._task_files(cycle)
        eval_out = self.data / "eval" / f"cycle-{cycle}.jsonl"
        train_out = self.data / "demo" / "rollouts" / f"cycle-{cycle}.jsonl"
        run_id = f"c{cycle}-{int(time.time())}"
        jobs, parts = [], []
        for split, tasks, out, n in (
            ("eval", eval_tasks, eval_out, self.cfg.eval_tasks),
            ("train", train_tasks, train_out, self.cfg.train_tasks * self.cfg.rollouts_per_task),
        ):
            if (split == "train" and not with_train) or (split == "eval" and eval_out.is_file()):
                continue
            part = out.with_suffix(".jsonl.part")
            part.parent.mkdir(parents=True, exist_ok=True)
            part.unlink(missing_ok=True)
            agent = start_agent(tasks, part, split, self.cfg, self.env, run_id, self.logs)
            jobs.append((f"cycle {cycle}: {split} rollouts", agent, n))
            parts.append((part, out))
        started = time.monotonic()
        run_agents(jobs, progress, self.logs)
        for part, out in parts:
            part.rename(out)
        eval_rows = read_jsonl(eval_out)
        return CycleResult(cycle, policy=self._policy_name(), train_reward=mean_reward(read_jsonl(train_out)),
                           eval_reward=mean_reward(eval_rows), eval_accuracy=mean_reward(eval_rows, "correct"),
                           seconds={"rollouts": time.monotonic() - started})

    def _ingest_command(self) -> list[str]:
        return spanrl_command("ingest", "--data", str(self.data), "--settle", "0s", "--agent", f"^{TRAIN_AGENT}$",
                              *self.cfg.ingest_args)

    def _policy_name(self) -> str:
        folder = latest_adapter(adapters_dir(self.data))
        return "base" if folder is None else folder.name

    def cycle(self, cycle: int, model: Path, server: subprocess.Popen) -> CycleResult:
        with self._progress() as progress:
            result = self._rollouts(cycle, progress, with_train=True)
            step = progress.add_task(f"cycle {cycle}: ingest (span files -> lake -> snapshot)", total=1)
            wait_for_quiet_files(self.data / "otel")
            result.seconds["ingest"] = run_step("ingest", self._ingest_command(), self.logs)
            check_no_eval_rows(self.data)
            snapshot = train_snapshot(self.data, cycle) if self.cfg.on_policy else "LATEST"
            progress.advance(step)
            step = progress.add_task(f"cycle {cycle}: train (snapshot -> LoRA adapter)", total=1)
            result.seconds["train"] = self.train(cycle, model, snapshot)
            progress.advance(step)
            result.adapter = self._policy_name()
            step = progress.add_task(f"cycle {cycle}: serve picks up {result.adapter}", total=1)
            started = time.monotonic()
            self.wait_for_adapter(result.adapter, server)
            result.seconds["reload"] = time.monotonic() - started
            progress.advance(step)
        self.console.print(f"cycle {cycle}: train reward {fmt(result.train_reward)}  held-out {fmt(result.eval_reward)}"
                           f"  -> adapter {result.adapter}")
        return result

    def train(self, cycle: int, model: Path, snapshot: str) -> float:
        """One `spanrl train`; its seconds. A cycle with nothing trainable (``--loss sft`` and no
        rollout reached ``--sft-min-return``) keeps the policy for the next cycle, which samples anew."""
        started = time.monotonic()
        try:
            run_step("train", spanrl_command("train", "--data", str(self.data), "--model", str(model),
                                             "--snapshot", snapshot, *self.cfg.train_args), self.logs)
        except StepError as exc:
            if exc.code != 2 or "no trainable transitions" not in exc.log_tail:
                raise
            reason = exc.log_tail.strip().splitlines()[-1]
            self.console.print(f"cycle {cycle}: nothing to train on ({reason}); the policy stays as it is")
        return time.monotonic() - started

    def evaluate_only(self, cycle: int) -> CycleResult:
        """The last policy's held-out score, then one more ingest so the lake holds every span."""
        with self._progress() as progress:
            result = self._rollouts(cycle, progress, with_train=False)
            step = progress.add_task("final ingest (the lake gets the last evaluation's spans)", total=1)
            wait_for_quiet_files(self.data / "otel")
            result.seconds["ingest"] = run_step("ingest", self._ingest_command(), self.logs)
            progress.advance(step)
        self.console.print(f"cycle {cycle}: held-out {fmt(result.eval_reward)} (policy {result.policy})")
        return result

    def wait_for_adapter(self, adapter: str, server: subprocess.Popen) -> None:
        """The server reports the adapter it serves on /health; wait until it names the new one."""

        def serving() -> bool:
            status, body = http_get(f"{self.serve_url}/health")
            return status == 200 and json.loads(body).get("adapter") == adapter

        wait_until(serving, f"serve loading adapter {adapter}", server, self.logs / "serve.log", self.cfg.reload_timeout_s)


def wait_for_quiet_files(folder: Path, quiet_s: float = 2.0, timeout_s: float = 60.0) -> None:
    """Spans still in flight (the server exports every 0.5 s) land before ingest reads the files."""
    def snapshot() -> list[tuple[str, int]]:
        return sorted((p.name, p.stat().st_size) for p in folder.glob("*") if p.is_file())

    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    while time.monotonic() < deadline:
        now = snapshot()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.25)


def train_snapshot(data: Path, cycle: int) -> str:
    """On-policy training: a snapshot of LATEST's rows from this cycle's rollouts only.

    Ingest snapshots every complete rollout in the lake, so cycle N's snapshot also holds the
    rollouts of older policies. The demo trains each cycle on its own rollouts (their group
    advantages are already computed per task, and tasks are per cycle) by writing a filtered
    snapshot with the public ``spanrl.transitions`` writer; its manifest names the parent.
    """
    import pyarrow.compute as pc

    from spanrl.transitions.snapshot import read_snapshot, write_snapshot

    table, manifest = read_snapshot(data, "LATEST")
    mine = table.filter(pc.starts_with(table["rollout_id"], f"c{cycle}-"))
    if mine.num_rows == 0:
        raise RuntimeError(f"snapshot {manifest['snapshot_id']} holds no transition of cycle {cycle}; "
                           f"see {data / 'demo' / 'logs'}")
    config = {**manifest.get("config", {}), "demo_cycle": cycle, "parent_snapshot": manifest["snapshot_id"],
              "filter": f"rollout_id LIKE 'c{cycle}-%'"}
    return write_snapshot(data, mine, config, manifest.get("source_files", []), manifest.get("stats")).name


def check_no_eval_rows(data: Path) -> None:
    """Held-out rollouts must never reach a training snapshot; fail loudly if one did."""
    import pyarrow.compute as pc

    from spanrl.transitions.snapshot import read_snapshot

    try:
        table, manifest = read_snapshot(data, "LATEST")
    except InputError as exc:
        raise RuntimeError(f"ingest wrote no snapshot ({exc}); see {data / 'demo' / 'logs' / 'ingest.log'}") from None
    leaked = pc.sum(pc.or_(pc.starts_with(table["task_id"], "eval-"),
                           pc.not_equal(table["agent_name"], TRAIN_AGENT))).as_py() or 0
    if leaked:
        raise RuntimeError(f"snapshot {manifest['snapshot_id']} holds {leaked} held-out/other-agent transitions; "
                           "the --agent filter failed")


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def run_demo(cfg: DemoConfig, console: Console | None = None) -> list[CycleResult]:
    """Run the loop; Ctrl-C or SIGTERM stops every subprocess before returning."""
    install_sigterm()
    return Demo(cfg, console or Console()).run()
