"""What a ``spanrl demo`` run does (``DemoConfig``, the ``--quick`` preset, the training methods)
and what each cycle yields."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import click

from spanrl.config import find_config_file, given, knob, load_config_file, resolve
from spanrl.errors import InputError

TRAIN_AGENT, EVAL_AGENT, VAL_AGENT = "calc", "calc-eval", "calc-val"

_GROUP = ["--advantage", "group"]
# RL trains with `spanrl train`'s defaults, nothing of its own: the defaults *are* this recipe (pg,
# lr 3e-4, 4 rollouts per step, k3 KL 0.05 to the base, the --max-kl update guard; docs/trainer.md),
# chosen from the demo's measurements (3e-4 between pg run 1's 5e-4, which learned in one cycle and
# then collapsed, and run 2's 2e-4, which barely moved). One recipe, so the documented default is the
# one measured; tests/demo/test_recipe.py fails if a flag here ever sets a knob to something else.
RL_TRAIN: list[str] = []
# Expert iteration (RAFT/ReST): each cycle fine-tunes on its best correct rollout of each task
# (reward >= 1.0, top 1 per task: one example per operator), step 5e-4 (docs/demo.md runs 4-6), without
# the KL term (--kl-coef 0: how its 3-seed row was measured, before the pg defaults gained it).
SFT_TRAIN = ["--loss", "sft", "--sft-min-return", "1.0", "--sft-top-k", "1", "--lr", "5e-4", "--rollouts-per-step", "2",
             "--kl-coef", "0"]

# name -> (spanrl ingest flags, spanrl train flags): the demo's training recipes, which are also the
# ablation arms of bench/demo_seeds.py. "rl" learns from every rollout, failures included (AIR
# pushes down the calls that broke the tool); "rl-no-air" is the same with identical credit (AIR is
# recorded but ignored); "rl-discounted" gives earlier calls gamma-discounted credit plus AIR to go.
METHODS: dict[str, tuple[list[str], list[str]]] = {
    "rl": (["--credit", "air", *_GROUP], RL_TRAIN),
    "rl-no-air": (["--credit", "identical", *_GROUP], RL_TRAIN),
    "rl-discounted": (["--credit", "discounted", *_GROUP], RL_TRAIN),
    "sft": (["--credit", "air", *_GROUP], SFT_TRAIN),
}
# The full demo runs RL with identical credit: over 3 seeds it gained +0.42 +/- 0.13 held-out reward
# in 5 cycles (expert iteration +0.40 +/- 0.08, RL with air credit +0.12 +/- 0.11; docs/demo.md, "The
# ablation over three seeds"). --quick uses "rl": AIR credit gives a gradient even when every rollout
# of a task failed alike, so the smoke run trains whatever the first answers are.
DEFAULT_METHOD = "rl-no-air"


# The smoke run: fewer tasks, same reply cap as the full demo. A calculator call is ~30 tokens of JSON
# (``{"name": "calculator", "arguments": {"expression": "12 * 7"}}``); the earlier cap of 16 cut every
# call short, so every tool call failed and every reward was 0 (issue 31). --quick (or ``quick = true``
# in [demo]) puts these in place of the field defaults: a flag or a [demo] key still wins.
QUICK = {"cycles": 1, "train_tasks": 2, "rollouts_per_task": 2, "eval_tasks": 4, "eval_subset": 4, "val_tasks": 4,
         "max_tokens": 48, "method": "rl", "promote": "better"}


def _quick(name: str) -> str:
    return f" (--quick: {QUICK[name]})"


@dataclass
class DemoConfig:
    """What one ``spanrl demo`` run does; every field a ``spanrl.config.knob`` (the flags are generated
    from them; the ones without a flag are set in [demo] of spanrl.toml)."""

    data: Path = knob(help="Data root.")
    config_file: Path | None = knob(None, "spanrl.toml with a [demo] table, also handed to the collector, serve, ingest "
                                    "and train it starts (default: DATA/spanrl.toml, then ./spanrl.toml).",
                                    flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    quick: bool = knob(False, f"A short run: {QUICK['cycles']} cycle, {QUICK['train_tasks']} training tasks x "
                       f"{QUICK['rollouts_per_task']}, {QUICK['eval_tasks']} held-out and {QUICK['val_tasks']} validation "
                       "tasks; keeps the policy unless the candidate is better (about 9 min on 2 busy cores).")
    model: Path | None = knob(None, "Local base model folder (default: SmolLM2-135M-Instruct, prepared under DATA/models).",
                              click_type=click.Path(file_okay=False, path_type=Path))
    cycles: int = knob(5, "Training cycles to run" + _quick("cycles") + ".")
    # training tasks (seeded by seed and cycle) and LoRA init; held-out and validation stay fixed
    seed: int = knob(0, "Seed of the training tasks and the LoRA init.")
    method: str = knob(DEFAULT_METHOD, "Training recipe: sft (expert iteration), rl (pg + air credit), rl-no-air, "
                       "rl-discounted" + _quick("method") + ".", choices=tuple(METHODS))
    train_tasks: int = knob(4, "Training tasks per cycle" + _quick("train_tasks") + ".")
    rollouts_per_task: int = knob(4, "Rollouts per training task (a group: the group advantage needs several)"
                                  + _quick("rollouts_per_task") + ".")
    # Held-out split (examples/calc_agent/tasks.py, 64 tasks): all ``eval_tasks`` at cycle 0 and after
    # the last cycle (the reported numbers), the first ``eval_subset`` at the cycles in between.
    eval_tasks: int = knob(64, "Held-out tasks evaluated at cycle 0 and after the last cycle (max 64)"
                           + _quick("eval_tasks") + ".")
    eval_subset: int = knob(16, "Held-out tasks evaluated at the cycles between" + _quick("eval_subset") + ".")
    val_tasks: int = knob(16, "Validation tasks scoring each candidate (max 32; never trained on, never reported)"
                          + _quick("val_tasks") + ".")
    promote_margin: float = knob(0.1, "Promote a candidate unless its validation reward is lower than the policy's by more.")
    # The gate (spanrl.demo.gate): "better" promotes only on a "better" verdict (what `spanrl adapters
    # promote --if-better` does); "margin" also promotes on no detectable difference within promote_margin.
    promote: str = knob("margin", "Gate: promote only on a better verdict (as `spanrl adapters promote --if-better`), or "
                        "also on no detectable difference within --promote-margin" + _quick("promote") + ".",
                        choices=("better", "margin"))
    ingest_args: list[str] | None = knob(None, "Flags for `spanrl ingest`, as one string (replace the method's).",
                                         parse=shlex.split)
    train_args: list[str] | None = knob(None, "Flags for `spanrl train`, as one string (replace the method's).",
                                        parse=shlex.split)
    # The agent's sampling temperature, for training rollouts and held-out ones alike: the held-out
    # score measures the agent as it runs (greedy measures only the mode; see docs/demo.md).
    temperature: float = knob(0.7, "The agent's sampling temperature (training and held-out rollouts).")
    eval_temperature: float | None = knob(None, "Held-out sampling temperature (default: temperature).")
    max_tokens: int = knob(48, "The agent's reply cap per call.")
    concurrency: int = knob(64, "Agent processes at once.")
    max_batch: int = knob(32, "The server's batch: all concurrent rollouts of a phase in one generate call.")
    on_policy: bool = knob(True, "Train each cycle on its own rollouts only (see train_snapshot).")
    reload_timeout_s: float = knob(600.0, "Longest wait for the server to load a promoted adapter.")

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        self.model = Path(self.model) if self.model is not None else None
        for name in ("cycles", "train_tasks", "rollouts_per_task", "eval_tasks", "eval_subset", "val_tasks",
                     "max_tokens", "concurrency"):
            if getattr(self, name) < (0 if name == "cycles" else 1):
                raise InputError(f"demo: {name} must be positive, got {getattr(self, name)}")
        if self.method not in METHODS:
            raise InputError(f"demo: --method {self.method!r}: choose one of {', '.join(METHODS)}")
        if self.eval_tasks > 64 or self.val_tasks > 32:
            raise InputError("demo: the held-out split has 64 tasks and the validation split 32; ask for fewer")
        if self.promote not in ("better", "margin"):
            raise InputError(f"demo: --promote must be better or margin, got {self.promote!r}")
        if self.promote_margin < 0:
            raise InputError(f"demo: --promote-margin must be >= 0, got {self.promote_margin}")
        self.eval_subset = min(self.eval_subset, self.eval_tasks)
        for name in ("ingest_args", "train_args"):
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, shlex.split(value))
        if self.ingest_args is None:
            self.ingest_args = list(METHODS[self.method][0])
        if self.train_args is None:
            self.train_args = list(METHODS[self.method][1])

    def held_out_tasks(self, cycle: int, last: int) -> int:
        """Every held-out task at cycle 0 and for the policy after the run's last cycle; the subset between."""
        return self.eval_tasks if cycle == 0 or cycle >= last else self.eval_subset

    @property
    def config_args(self) -> list[str]:
        """``--config FILE`` for the commands the demo starts, so they read the demo's own file."""
        return ["--config", str(self.config_file)] if self.config_file is not None else []


def make_demo_config(**flags: Any) -> DemoConfig:
    """Flags (None: not given) > [demo] in spanrl.toml > the --quick preset (when --quick or ``quick = true``)
    > the field defaults."""
    data = Path(flags["data"])
    file = load_config_file(find_config_file(data, flags.get("config_file")))
    table = file.table("demo", [f.name for f in fields(DemoConfig)])
    preset = {k: v for k, v in QUICK.items() if k not in table} if flags.get("quick") or table.get("quick") else {}
    return resolve(DemoConfig, {**preset, **{k: v for k, v in flags.items() if given(v)}}, "demo")


def check_services(cfg: DemoConfig) -> None:
    """The demo starts `spanrl collector` and `spanrl serve` itself, on loopback, and its agent sends no
    token: their [collector] and [serve] sections (the demo's file) are read here, so a typo stops the
    demo before it prepares anything, and a token is refused rather than failing every call."""
    from spanrl.collector.config import make_collector_config
    from spanrl.serve.config import make_serve_config

    flags = {"config_file": cfg.config_file}
    collector = make_collector_config(cfg.data, **flags)
    serve = make_serve_config(data=cfg.data, model=cfg.model or Path("demo"), **flags)
    for name, token, var in (("collector", collector.token, "SPANRL_COLLECTOR_TOKEN"),
                             ("serve", serve.token, "SPANRL_SERVE_TOKEN")):
        if token is not None:
            raise InputError(f"demo: a token is set for `spanrl {name}` ([{name}] token in {cfg.config_file}, or "
                             f"${var}), and the demo's agent sends none; unset it for the demo")


@dataclass
class CycleResult:
    """One row of the final table, and one line of DATA/demo/cycles.jsonl (written as the cycle ends)."""

    cycle: int
    policy: str
    train_reward: float | None = None
    eval_reward: float | None = None
    eval_accuracy: float | None = None
    eval_n: int | None = None
    val_reward: float | None = None  # the policy's validation reward (the gate's reference)
    candidate: str | None = None  # the adapter trained on this cycle's rollouts
    candidate_val_reward: float | None = None
    promoted: bool | None = None  # None: nothing was trained
    gate: str | None = None  # the gate's verdict: better / worse / no detectable difference / no comparison
    gate_message: str | None = None  # what the demo printed: "promoted (better: ...)", "kept (no difference: ...)"
    adapter: str | None = None  # adapters/LATEST after this cycle
    seconds: dict[str, float] = field(default_factory=dict)
