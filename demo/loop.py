"""``spanrl demo``: the whole loop on one machine, every stage a real subprocess.

    collector (embedded) ◀─OTLP── calc agent (via spanrl rollout) ──HTTP──▶ spanrl serve (hot-reloads adapters/LATEST)
        │ span files
        ▼
    spanrl ingest ──▶ lake + transitions snapshot ──▶ spanrl train ──▶ adapters/<cycle>/ ──▶ serve

Cycle ``N`` means "the policy after N training cycles" (0 = the base model). For each cycle the
demo evaluates policy N on the fixed held-out split, collects training rollouts with it, ingests,
trains a candidate adapter (``spanrl train --no-promote``), scores the candidate on the validation
split through the same server (loaded by name) and promotes it to ``adapters/LATEST`` only if its
validation reward is not below the current policy's by more than ``--promote-margin``; otherwise it
stays a candidate and the policy is kept. A last evaluation scores the final policy.
Held-out and validation rollouts run under the agent names ``calc-eval``/``calc-val`` and ingest
keeps only ``--agent ^calc$`` calls, so they are in the lake (queryable) but never in a training
snapshot; the demo checks that. Results land in ``DATA/eval/cycle-N.jsonl`` (held-out),
``DATA/eval/val-N.jsonl`` / ``val-candidate-N.jsonl`` (validation) and ``DATA/demo/rollouts/cycle-N.jsonl``
(training rollouts): the agent's own result lines, one agent process per rollout, run by `spanrl rollout`
(``spanrl.demo.agent.run_phases``), and one line per finished cycle in
``DATA/demo/cycles.jsonl``. Re-running continues the numbering; a file that is whole is not redone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import asdict
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
    Phase,
    load_task_module,
    mean_reward,
    read_jsonl,
    run_phases,
    task_lines,
    write_jsonl,
)
from spanrl.demo.config import TRAIN_AGENT, CycleResult, DemoConfig
from spanrl.demo.gate import gate_decision
from spanrl.demo.procs import (
    StepError,
    background,
    free_port,
    http_get,
    http_post_json,
    install_sigterm,
    port_open,
    run_step,
    spanrl_command,
    stopped_helpers,
    wait_until,
)
from spanrl.demo.progress import LineProgress
from spanrl.errors import InputError
from spanrl.layout import otel_dir
from spanrl.trainer.adapter import adapters_dir, latest_adapter, promote_adapter, read_cycles

# ----------------------------------------------------------------------------------------------
# the loop


class Demo:
    """Holds the ports, paths and services of one run; ``run()`` is the loop."""

    def __init__(self, cfg: DemoConfig, console: Console) -> None:
        self.cfg, self.console = cfg, console
        self.data = cfg.data.resolve()
        self.logs = self.data / "demo" / "logs"
        self.record = self.data / "demo" / "cycles.jsonl"
        self.tasks = load_task_module()
        self.results: list[CycleResult] = []
        self.current_val: float | None = None  # validation reward of the policy now served
        self.current_val_file: Path | None = None  # its validation result lines (the gate's baseline)
        self.started = time.monotonic()
        self.helpers: dict[str, subprocess.Popen] = {}  # the collector and serve run() started

    def first_cycle(self) -> int:
        """Cycles continue from the last recorded one (or, for older data roots, the adapters trained)."""
        done = read_jsonl(self.record)
        if done:
            self.current_val = next((r.get("policy_val_reward") for r in reversed(done)), None)
            file = next((r.get("policy_val_file") for r in reversed(done) if r.get("policy_val_file")), None)
            self.current_val_file = Path(file) if file else None
            return int(done[-1]["cycle"]) + 1
        return len(read_cycles(adapters_dir(self.data)))

    def run(self) -> list[CycleResult]:
        self.data.mkdir(parents=True, exist_ok=True)
        model = self.cfg.model or self._prepare_model()
        otlp, grpc, serve = free_port(), free_port(), free_port()
        # loopback, whatever [collector] and [serve] say: the demo and its agent connect to 127.0.0.1
        collector_cmd = spanrl_command("collector", "--embedded", "--data", str(self.data), "--host", "127.0.0.1",
                                       "--http-port", str(otlp), "--grpc-port", str(grpc), *self.cfg.config_args)
        serve_cmd = spanrl_command("serve", "--model", str(model), "--data", str(self.data), "--host", "127.0.0.1",
                                   "--adapter", "LATEST", "--port", str(serve), "--max-batch", str(self.cfg.max_batch),
                                   "--otlp-endpoint", f"http://127.0.0.1:{otlp}", *self.cfg.config_args)
        serve_env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "500"}  # its spans reach the files promptly
        with (
            background("collector", collector_cmd, self.logs) as collector,
            background("serve", serve_cmd, self.logs, serve_env) as server,
        ):
            self.console.print(f"[bold]collector[/] OTLP http://127.0.0.1:{otlp}   "
                               f"[bold]serve[/] http://127.0.0.1:{serve}/v1   logs {self.logs}", soft_wrap=True)
            wait_until(lambda: port_open(otlp), "collector", collector, self.logs / "collector.log", 60)
            wait_until(lambda: http_get(f"http://127.0.0.1:{serve}/health")[0] == 200, "serve", server,
                       self.logs / "serve.log", 600)
            self.serve_url, self.otlp_url = f"http://127.0.0.1:{serve}", f"http://127.0.0.1:{otlp}"
            self.helpers = {"collector": collector, "serve": server}
            start = self.first_cycle()
            self.last = start + self.cfg.cycles
            for cycle in range(start, self.last):
                self.results.append(self.cycle(cycle, model, server))
            self.results.append(self.evaluate_only(self.last))
        return self.results

    def _prepare_model(self) -> Path:
        from spanrl.serve.models import prepare_demo_model

        text = "preparing the demo model (SmolLM2-135M-Instruct, once per data root)"
        if not self.console.is_terminal:
            self.console.print(text, markup=False)
        with self.console.status(text):
            return prepare_demo_model(self.data)

    def _progress(self) -> Progress | LineProgress:
        """Live bars in a terminal; one line per phase and step (counts, elapsed) in a pipe or a file."""
        if not self.console.is_terminal:
            return LineProgress(self.console)
        return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.console)

    def _tasks(self, split: str, n: int, cycle: int = 0) -> Path:
        folder = self.data / "demo" / "tasks"
        if split == "train":  # seed 0 keeps the task lists of earlier versions
            seed = cycle + 10_000 * self.cfg.seed
            return write_jsonl(folder / f"train-cycle-{cycle}.jsonl", task_lines(self.tasks.make_tasks("train", n, seed=seed)))
        return write_jsonl(folder / f"{split}-{n}.jsonl", task_lines(self.tasks.make_tasks(split, n)))

    def _phases(self, cycle: int, progress: Progress, phases: list[Phase]) -> float:
        """Run each phase whose ``out`` is not whole yet through `spanrl rollout`; seconds.

        Run ids ``c<cycle>-<time>-<phase>`` start every rollout id (``<run id>.<task id>.<sample>``),
        which is how a cycle's training snapshot finds its own rollouts (``run_prefix``)."""
        todo = [p for p in phases if not p.out.is_file()]  # a resumed cycle skips the phases it finished
        started = time.monotonic()
        if todo:
            try:
                run_phases(todo, self.cfg, f"c{cycle}-{int(time.time())}", self.otlp_url, f"{self.serve_url}/v1",
                           progress)
            except Exception as exc:
                if gone := stopped_helpers(self.helpers, self.logs):
                    raise RuntimeError(f"cycle {cycle}'s rollouts failed because {gone}. Finished cycles are kept: run "
                                       f"the same `spanrl demo --data {self.data}` again to resume.\n"
                                       f"{(str(exc).splitlines() or [type(exc).__name__])[0]}") from exc
                raise
        return time.monotonic() - started

    def _held_out(self, cycle: int) -> tuple[Path, Path]:
        n = self.cfg.held_out_tasks(cycle, self.last)
        return self._tasks("eval", n), self.data / "eval" / f"cycle-{cycle}.jsonl"

    def _ingest_command(self) -> list[str]:
        return spanrl_command("ingest", "--data", str(self.data), "--settle", "0s", "--agent", f"^{TRAIN_AGENT}$",
                              *self.cfg.config_args, *self.cfg.ingest_args)

    def _policy_name(self) -> str:
        folder = latest_adapter(adapters_dir(self.data))
        return "base" if folder is None else folder.name

    def cycle(self, cycle: int, model: Path, server: subprocess.Popen) -> CycleResult:
        result = CycleResult(cycle, policy=self._policy_name())
        eval_tasks, eval_out = self._held_out(cycle)
        train_out = self.data / "demo" / "rollouts" / f"cycle-{cycle}.jsonl"
        val_out = self.data / "eval" / f"val-{cycle}.jsonl"
        phases = [Phase("eval", eval_tasks, eval_out), Phase("train", self._tasks("train", self.cfg.train_tasks, cycle), train_out)]
        if self.current_val is None:  # the policy's validation score, once (later: the gate's)
            phases.append(Phase("val", self._tasks("val", self.cfg.val_tasks), val_out))
        with self._progress() as progress:
            result.seconds["rollouts"] = self._phases(cycle, progress, phases)
            if val_out.is_file() and self.current_val_file is None:
                self.current_val, self.current_val_file = mean_reward(read_jsonl(val_out)), val_out
            step = progress.add_task(f"cycle {cycle}: ingest (span files -> lake -> snapshot)", total=1)
            wait_for_quiet_files(otel_dir(self.data))
            result.seconds["ingest"] = run_step("ingest", self._ingest_command(), self.logs)
            check_no_eval_rows(self.data)
            snapshot = train_snapshot(self.data, cycle, run_prefix(train_out)) if self.cfg.on_policy else "LATEST"
            progress.advance(step)
            step = progress.add_task(f"cycle {cycle}: train a candidate (snapshot -> LoRA adapter)", total=1)
            (self.data / "eval" / f"val-candidate-{cycle}.jsonl").unlink(missing_ok=True)  # a resumed cycle trains anew
            result.seconds["train"], result.candidate = self.train(cycle, model, snapshot)
            progress.advance(step)
            if result.candidate is not None:
                self.gate(cycle, result, progress, server)
        self._summarise(result, eval_out, train_out)
        self.console.print(f"cycle {cycle}: train reward {fmt(result.train_reward)}  held-out {fmt(result.eval_reward)}"
                           f" (n={result.eval_n})  validation {fmt(result.val_reward)} -> candidate "
                           f"{result.candidate or '-'} {fmt(result.candidate_val_reward)}: "
                           f"{result.gate_message or 'nothing trained'}  -> adapter {result.adapter}"
                           f"  [{time.monotonic() - self.started:.0f}s so far]", markup=False, soft_wrap=True)
        return result

    def gate(self, cycle: int, result: CycleResult, progress: Progress, server: subprocess.Popen) -> None:
        """Score the candidate on the validation split (loaded by name beside LATEST), then promote it
        or keep it as a candidate; the server follows LATEST, so a promotion is one pointer swap."""
        cid = str(result.candidate)
        root = adapters_dir(self.data)
        out = self.data / "eval" / f"val-candidate-{cycle}.jsonl"
        started = time.monotonic()
        if not out.is_file():
            self._serve_adapter("load", {"lora_name": cid, "lora_path": str(root / cid), "load_inplace": True})
            try:
                self._phases(cycle, progress, [Phase("val", self._tasks("val", self.cfg.val_tasks), out, cid)])
            finally:
                self._serve_adapter("unload", {"lora_name": cid})
        result.val_reward, result.candidate_val_reward = self.current_val, mean_reward(read_jsonl(out))
        policy_rows = read_jsonl(self.current_val_file) if self.current_val_file else []
        decision = gate_decision(policy_rows, read_jsonl(out), result.policy, cid,
                                 self.data / "eval" / f"gate-{cycle}.json", self.cfg.promote, self.cfg.promote_margin)
        result.promoted, result.gate, result.gate_message = decision.promote, decision.verdict, decision.message
        if result.promoted:
            promote_adapter(root, cid)
            self.wait_for_adapter(cid, server)
            self.current_val, self.current_val_file = result.candidate_val_reward, out
        result.seconds["validate"] = time.monotonic() - started

    def _serve_adapter(self, action: str, body: dict[str, object]) -> None:
        status, text = http_post_json(f"{self.serve_url}/v1/{action}_lora_adapter", body)
        if status != 200 and action == "load":
            raise RuntimeError(f"serve could not {action} {body.get('lora_name')}: HTTP {status} {text[:300]}")

    def _summarise(self, result: CycleResult, eval_out: Path, train_out: Path | None) -> None:
        """Fill the result from the agents' files and append it to DATA/demo/cycles.jsonl."""
        eval_rows = read_jsonl(eval_out)
        result.eval_reward, result.eval_n = mean_reward(eval_rows), len(eval_rows) or None
        result.eval_accuracy = mean_reward(eval_rows, "correct")
        result.train_reward = mean_reward(read_jsonl(train_out)) if train_out else None
        result.val_reward = result.val_reward if result.val_reward is not None else self.current_val
        result.adapter = self._policy_name()
        line = {**asdict(result), "policy_val_reward": self.current_val, "method": self.cfg.method,
                "policy_val_file": str(self.current_val_file) if self.current_val_file else None,
                "seed": self.cfg.seed, "ingest_args": self.cfg.ingest_args, "train_args": self.cfg.train_args,
                "finished_at": time.time()}
        self.record.parent.mkdir(parents=True, exist_ok=True)
        with open(self.record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, sort_keys=True) + "\n")

    def train(self, cycle: int, model: Path, snapshot: str) -> tuple[float, str | None]:
        """One `spanrl train --no-promote`: (seconds, the candidate's id). A cycle with nothing
        trainable (``--loss sft`` and no rollout reached ``--sft-min-return``) gives no candidate
        and keeps the policy for the next cycle, which samples anew."""
        started = time.monotonic()
        before = len(read_cycles(adapters_dir(self.data)))
        try:
            run_step("train", spanrl_command("train", "--data", str(self.data), "--model", str(model),
                                             "--snapshot", snapshot, "--seed", str(self.cfg.seed), "--no-promote",
                                             *self.cfg.config_args, *self.cfg.train_args), self.logs)
        except StepError as exc:
            if exc.code != 2 or "no trainable transitions" not in exc.log_tail:
                raise
            reason = exc.log_tail.strip().splitlines()[-1]
            self.console.print(f"cycle {cycle}: nothing to train on ({reason}); the policy stays as it is")
            return time.monotonic() - started, None
        lines = read_cycles(adapters_dir(self.data))
        return time.monotonic() - started, (lines[-1]["cycle_id"] if len(lines) > before else None)

    def evaluate_only(self, cycle: int) -> CycleResult:
        """The last policy's held-out score (every held-out task), then one more ingest so the lake holds every span."""
        result = CycleResult(cycle, policy=self._policy_name())
        eval_tasks, eval_out = self._held_out(cycle)
        with self._progress() as progress:
            result.seconds["rollouts"] = self._phases(cycle, progress, [Phase("eval", eval_tasks, eval_out)])
            step = progress.add_task("final ingest (the lake gets the last evaluation's spans)", total=1)
            wait_for_quiet_files(otel_dir(self.data))
            result.seconds["ingest"] = run_step("ingest", self._ingest_command(), self.logs)
            progress.advance(step)
        result.val_reward = self.current_val
        self._summarise(result, eval_out, None)
        self.console.print(f"cycle {cycle}: held-out {fmt(result.eval_reward)} (n={result.eval_n}, policy {result.policy})")
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


def run_prefix(rollouts_file: Path) -> str | None:
    """The run id prefix in front of this file's rollout ids (``c<cycle>-<time>-``): a cycle
    resumed after an interruption trains on the rollouts that phase finished, not on stragglers."""
    rows = read_jsonl(rollouts_file)
    match = re.match(r"(c\d+-\d+-)", str(rows[0]["rollout_id"])) if rows else None
    return match.group(1) if match else None


def train_snapshot(data: Path, cycle: int, prefix: str | None = None) -> str:
    """On-policy training: a snapshot of LATEST's rows from this cycle's rollouts only.

    Ingest snapshots every complete rollout in the lake, so cycle N's snapshot also holds the
    rollouts of older policies. The demo trains each cycle on its own rollouts (their group
    advantages are already computed per task, and tasks are per cycle) by writing a filtered
    snapshot with the public ``spanrl.transitions`` writer; its manifest names the parent.
    ``prefix``: the rollout-id prefix of this cycle's run (default ``c<cycle>-``).
    """
    import pyarrow.compute as pc

    from spanrl.transitions.snapshot import read_snapshot, write_snapshot

    prefix = prefix or f"c{cycle}-"
    table, manifest = read_snapshot(data, "LATEST")
    mine = table.filter(pc.starts_with(table["rollout_id"], prefix))
    if mine.num_rows == 0:
        raise RuntimeError(f"snapshot {manifest['snapshot_id']} holds no transition of cycle {cycle}; "
                           f"see {data / 'demo' / 'logs'}")
    config = {**manifest.get("config", {}), "demo_cycle": cycle, "parent_snapshot": manifest["snapshot_id"],
              "filter": f"rollout_id LIKE '{prefix}%'"}
    return write_snapshot(data, mine, config, manifest.get("source_files", []), manifest.get("stats")).name


def check_no_eval_rows(data: Path) -> None:
    """Held-out rollouts must never reach a training snapshot; fail loudly if one did."""
    import pyarrow.compute as pc

    from spanrl.transitions.snapshot import read_snapshot

    try:
        table, manifest = read_snapshot(data, "LATEST")
    except InputError as exc:
        raise RuntimeError(f"ingest wrote no snapshot ({exc}); see {data / 'demo' / 'logs' / 'ingest.log'}") from None
    held_out = pc.or_(pc.starts_with(table["task_id"], "eval-"), pc.starts_with(table["task_id"], "val-"))
    leaked = pc.sum(pc.or_(held_out, pc.not_equal(table["agent_name"], TRAIN_AGENT))).as_py() or 0
    if leaked:
        raise RuntimeError(f"snapshot {manifest['snapshot_id']} holds {leaked} held-out/validation/other-agent transitions; "
                           "the --agent filter failed")


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def run_demo(cfg: DemoConfig, console: Console | None = None) -> list[CycleResult]:
    """Run the loop; Ctrl-C or SIGTERM stops every subprocess before returning."""
    install_sigterm()
    return Demo(cfg, console or Console()).run()
