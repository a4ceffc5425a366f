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

import contextlib
import importlib.util
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from spanrl.errors import InputError

TRAIN_AGENT, EVAL_AGENT = "calc", "calc-eval"


@dataclass
class DemoConfig:
    """What one ``spanrl demo`` run does; the presets below are the documented defaults."""

    data: Path
    model: Path | None = None
    cycles: int = 5
    train_tasks: int = 4  # fresh training tasks per cycle (seeded by the cycle number)
    rollouts_per_task: int = 4  # a group per task: the group advantage needs several
    eval_tasks: int = 16  # the first tasks of the fixed held-out split (never trained on)
    # The agent's sampling temperature, for training rollouts and held-out ones alike: the held-out
    # score measures the agent as it runs (greedy measures only the mode; see docs/demo.md).
    temperature: float = 0.7
    eval_temperature: float | None = None  # None: the same as temperature
    max_tokens: int = 48
    concurrency: int = 64
    max_batch: int = 32  # the server's batch: all concurrent rollouts of a phase in one generate call
    on_policy: bool = True  # train each cycle on its own rollouts only (see train_snapshot)
    ingest_args: list[str] = field(default_factory=lambda: ["--credit", "identical", "--advantage", "group"])
    # Expert iteration (RAFT/ReST): each cycle fine-tunes on its best correct rollout of each task
    # (reward >= 1.0, top 1 per task: one example per operator, so no operator crowds out the
    # others), with a larger step than spanrl train's default (2e-5) because a CPU cycle sees few
    # rollouts. docs/demo.md has the measured runs behind this choice (pg runs 1-3, sft runs 4-6).
    train_args: list[str] = field(default_factory=lambda: [
        "--loss", "sft", "--sft-min-return", "1.0", "--sft-top-k", "1", "--lr", "5e-4", "--rollouts-per-step", "2"])
    reload_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        for name in ("cycles", "train_tasks", "rollouts_per_task", "eval_tasks", "max_tokens", "concurrency"):
            if getattr(self, name) < (0 if name == "cycles" else 1):
                raise InputError(f"demo: {name} must be positive, got {getattr(self, name)}")


QUICK = {"cycles": 1, "train_tasks": 2, "rollouts_per_task": 2, "eval_tasks": 2, "max_tokens": 16}


@dataclass
class CycleResult:
    """One row of the final table."""

    cycle: int
    policy: str
    train_reward: float | None = None
    eval_reward: float | None = None
    eval_accuracy: float | None = None
    adapter: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# processes


def free_port() -> int:
    """A loopback port the OS says is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spanrl_command(*args: str) -> list[str]:
    """``python -m spanrl ...`` with this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-m", "spanrl", *args]


@contextlib.contextmanager
def background(name: str, cmd: list[str], log_dir: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` in its own process group; on exit SIGTERM the group, then SIGKILL after 15 s."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"{name}.log", "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield proc
    finally:
        stop_group(proc)
        log.close()


def stop_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """Stop a process group we started (never anything else)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """GET ``url`` -> (status, body); (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except OSError as exc:
        return getattr(exc, "code", 0) or 0, str(exc)


def wait_until(check, what: str, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Poll ``check()`` until true; fail with the log's tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {proc.returncode}; see {log}\n{tail(log)}")
        time.sleep(0.5)
    raise RuntimeError(f"{what}: not ready after {timeout_s:.0f} s; see {log}\n{tail(log)}")


def tail(path: Path, lines: int = 15, start: int = 0) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class StepError(RuntimeError):
    """A pipeline step that exited non-zero: its exit code and the tail of its log."""

    def __init__(self, message: str, code: int, log_tail: str) -> None:
        super().__init__(message)
        self.code, self.log_tail = code, log_tail


def run_step(name: str, cmd: list[str], log_dir: Path) -> float:
    """Run one pipeline step to completion (its output goes to the log); return its seconds."""
    log_path = log_dir / f"{name}.log"
    started = time.monotonic()
    with open(log_path, "ab") as log:
        log.write(f"\n$ {shlex.join(cmd)}\n".encode())
        log.flush()
        offset = log.tell()  # this run's output starts here (the log keeps every earlier run)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait()
        finally:
            stop_group(proc)
    if code != 0:
        last = tail(log_path, start=offset)
        raise StepError(f"`{shlex.join(cmd[2:])}` failed with exit code {code}; see {log_path}\n{last}", code, last)
    return time.monotonic() - started


# ----------------------------------------------------------------------------------------------
# the agent and its tasks


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


def start_agent(tasks: Path, out: Path, split: str, cfg: DemoConfig, env: dict[str, str], run_id: str,
                log_dir: Path) -> subprocess.Popen:
    """One agent process running every rollout of a task file concurrently (stderr -> agent-SPLIT.log)."""
    train = split == "train"
    cmd = [sys.executable, str(agent_dir() / "agent.py"), "--tasks", str(tasks), "--out", str(out),
           "--split", split, "--agent-name", TRAIN_AGENT if train else EVAL_AGENT, "--run-id", run_id,
           "--rollouts", str(cfg.rollouts_per_task if train else 1),
           "--temperature", str(cfg.temperature if train or cfg.eval_temperature is None else cfg.eval_temperature),
           "--max-tokens", str(cfg.max_tokens), "--concurrency", str(cfg.concurrency)]
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"agent-{split}.log", "ab") as log:
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
        return len(read_jsonl(self.data / "adapters" / "cycles.jsonl"))

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
        from spanrl.trainer.models import prepare_demo_model

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
        latest = self.data / "adapters" / "LATEST"
        return latest.read_text().strip() if latest.is_file() else "base"

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
    import duckdb

    latest = data / "transitions" / "LATEST"
    if not latest.is_file():
        raise RuntimeError(f"ingest wrote no snapshot ({latest} is missing); see {data / 'demo' / 'logs' / 'ingest.log'}")
    folder = data / "transitions" / latest.read_text().strip()
    if not list(folder.glob("*.parquet")):
        return
    with duckdb.connect() as con:
        leaked = con.execute(
            "select count(*) from read_parquet($glob) where task_id like 'eval-%' or agent_name <> $agent",
            {"glob": str(folder / "*.parquet"), "agent": TRAIN_AGENT},
        ).fetchone()[0]
    if leaked:
        raise RuntimeError(f"snapshot {folder} holds {leaked} held-out/other-agent transitions; the --agent filter failed")


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def install_sigterm() -> None:
    """SIGTERM behaves like Ctrl-C, so every ``finally`` stops its subprocesses."""

    def raise_interrupt(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_interrupt)


def run_demo(cfg: DemoConfig, console: Console | None = None) -> list[CycleResult]:
    """Run the loop; Ctrl-C or SIGTERM stops every subprocess before returning."""
    install_sigterm()
    return Demo(cfg, console or Console()).run()
