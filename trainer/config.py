"""What the user sets for ``spanrl train`` (docs/trainer.md): one dataclass, every field a knob.

Each field (``spanrl.config.knob``) is the one home of its default, help text, choices and flag: the
``spanrl train`` options are generated from them. Values come from flags, then ``$SPANRL_DATA`` (for
the data root), then the ``[train]`` section of ``spanrl.toml``, then these defaults
(``spanrl.config.resolve``). The resolved config is written into each adapter's
``training_state.json``. Runtime facts (device, world size) are not here: they are discovered, not set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import check_choices, knob, resolve
from spanrl.errors import InputError
from spanrl.layout import agent_adapters_dir
from spanrl.options import DEFAULT_DATA, check_keep
from spanrl.trainer.tracking import parse_report_to  # light: the trackers' libraries load when opened

LOSS_CHOICES = ("pg", "ppo", "sft")
AGG_CHOICES = ("rollout", "sequence", "token")
SCHEDULE_CHOICES = ("constant", "cosine")
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


@dataclass
class TrainConfig:
    """Options of one training cycle.

    > Parameters that control the data: ``snapshot``, ``max_prompt_tokens``, ``max_response_tokens``,
    ``sft_min_return``, ``sft_top_k``.
    > Parameters that control the objective: ``loss``, ``loss_agg``, ``is_cap``, ``clip_eps``,
    ``clip_eps_high``, ``kl_coef``, ``max_kl`` (the update guard).
    > Parameters that control optimisation: ``lr``, ``lr_schedule``, ``epochs``, ``rollouts_per_step``,
    ``tokens_per_batch``, ``grad_clip``, ``gradient_checkpointing``, ``merge_calls``, ``seed``.
    > Parameters that control the adapter: ``lora_r``, ``lora_alpha`` (targets: all linear layers but
    the output head, what vLLM accepts), ``fresh``.
    """

    model: Path = knob(Path("."), "Local base model folder (no hub downloads).", required=True, show=False,
                       click_type=click.Path(path_type=Path))
    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    snapshot: str = knob("LATEST", "Snapshot id or LATEST.")
    out: Path | None = knob(None, "Adapters root (default DATA/adapters).",
                            click_type=click.Path(file_okay=False, path_type=Path))
    loss: str = knob("pg", "pg: policy gradient with advantage, IS-truncated against behaviour log-probs; "
                     "ppo: clipped ratio against the policy at cycle start, several epochs; "
                     "sft: imitation of good rollouts only.", choices=LOSS_CHOICES)
    loss_agg: str = knob("rollout", "rollout: every rollout weighs the same whatever its number of calls; "
                         "sequence: every call weighs the same; token: every response token weighs the same.",
                         choices=AGG_CHOICES)
    lr: float | None = knob(None, "Learning rate (default 3e-4 for pg/ppo, 2e-4 for sft).")
    lr_schedule: str = knob("constant", "Learning-rate schedule (cosine: 5% warmup, counted in rollouts).",
                            choices=SCHEDULE_CHOICES)
    epochs: int | None = knob(None, "Passes over the snapshot (default 1; 2 for ppo).")
    rollouts_per_step: int = knob(4, "Rollouts per optimizer step (steps count rollouts).")
    tokens_per_batch: int = knob(4096, "Micro-batch budget in padded tokens (grad accumulation).")
    max_prompt_tokens: int = knob(2048, "Prompts longer than this lose their start.")
    max_response_tokens: int = knob(1024, "Responses longer than this lose their end.")
    is_cap: float = knob(2.0, "Truncation cap of the importance weight pi/mu (pg, ppo).")
    clip_eps: float = knob(0.2, "PPO lower clip: ratio >= 1 - eps.")
    clip_eps_high: float = knob(0.28, "PPO upper clip: ratio <= 1 + eps_high.")
    kl_coef: float = knob(0.05, "Weight of the k3 KL to the base (adapter disabled); 0 = off.")
    max_kl: float = knob(1.0, "Update guard: roll back an optimizer step after which the policy's mean per-token KL "
                         "to the policy at cycle start exceeds this (read on the next step's tokens; 0 = off).")
    sft_min_return: float | None = knob(None, "sft keeps calls with return >= this.")
    sft_top_k: int | None = knob(None, "sft keeps the k best rollouts of each task.")
    grad_clip: float = knob(1.0, "Clip the global grad norm to this (0 = off).")
    lora_r: int = knob(16, "LoRA rank (vLLM accepts 1, 8, 16, 32, 64, ...).")
    lora_alpha: int = knob(32, "LoRA alpha (scale alpha / r).")
    gradient_checkpointing: bool = knob(False, "Recompute activations (less memory).",
                                        flag="--gradient-checkpointing/--no-gradient-checkpointing")
    merge_calls: bool = knob(True, "Train a call inside the previous call's sequence when its tokens extend that call's "
                             "prompt and response (trajectory merging: the shared prefix is computed once; same loss).",
                             flag="--merge-calls/--no-merge-calls", show="on")
    seed: int = knob(0, "Seed for LoRA init and rollout order.")
    fresh: bool = knob(False, "Start a new adapter instead of continuing LATEST.")
    agent: str | None = knob(None, "Train only the transitions of this agent (agent_name) into its own adapter chain, "
                             "DATA/adapters/agents/NAME (its own LATEST and cycle log; --out overrides).", metavar="NAME")
    new_only: bool = knob(False, "Train only on rollouts that no earlier cycle of adapters/LATEST's chain trained on.")
    retrain: bool = knob(False, "Train on a snapshot that adapters/LATEST was already trained on (default: skip it).")
    keep_adapters: int | None = knob(None, "After saving: keep the N newest adapters, plus LATEST and every ancestor of "
                                     "a kept one (`spanrl adapters clean`).", metavar="N")
    report_to: str = knob("none", "Experiment trackers, comma-separated (the Hugging Face convention): mlflow, "
                          "tensorboard, wandb or none. Offline: MLflow to DATA/mlruns (or $MLFLOW_TRACKING_URI), "
                          "event files in DATA/tensorboard, W&B offline mode. Each is an extra: pip install "
                          "'spanrl[mlflow]'.", env="SPANRL_REPORT_TO", metavar="LIST")

    def __post_init__(self) -> None:
        self.model = Path(self.model)
        self.data = Path(self.data)
        self.out = Path(self.out) if self.out is not None else None
        check_choices(self)
        if self.agent is not None:
            try:
                agent_adapters_dir(self.data, self.agent)
            except ValueError as exc:
                raise InputError(f"--agent: {exc}") from None
        for name in ("rollouts_per_step", "tokens_per_batch", "max_prompt_tokens", "max_response_tokens"):
            if getattr(self, name) < 1:
                raise InputError(f"--{_flag(name)} must be >= 1, got {getattr(self, name)}")
        if self.epochs is not None and self.epochs < 1:
            raise InputError(f"--epochs must be >= 1, got {self.epochs}")
        if self.lr is not None and not self.lr > 0:
            raise InputError(f"--lr must be > 0, got {self.lr}")
        if self.is_cap <= 0:
            raise InputError(f"--is-cap must be > 0, got {self.is_cap}; use a large value to turn truncation off")
        if not 0 < self.clip_eps < 1 or self.clip_eps_high <= 0:
            raise InputError(
                f"--clip-eps must be in (0, 1) and --clip-eps-high > 0, got {self.clip_eps}, {self.clip_eps_high}"
            )
        if self.kl_coef < 0 or self.grad_clip < 0 or self.max_kl < 0:
            raise InputError("--kl-coef, --grad-clip and --max-kl must be >= 0; set 0 to turn them off")
        if self.sft_top_k is not None and self.sft_top_k < 1:
            raise InputError(f"--sft-top-k must be >= 1, got {self.sft_top_k}")
        if self.loss != "sft" and (self.sft_top_k is not None or self.sft_min_return is not None):
            raise InputError("--sft-top-k/--sft-min-return apply to --loss sft only; drop them or set --loss sft")
        if self.lora_r not in VLLM_LORA_RANKS:
            raise InputError(f"--lora-r {self.lora_r}: vLLM accepts {', '.join(map(str, VLLM_LORA_RANKS))}")
        if self.lora_alpha <= 0:
            raise InputError(f"--lora-alpha must be > 0, got {self.lora_alpha}")
        if self.keep_adapters is not None:
            check_keep("--keep-adapters", self.keep_adapters)
        try:
            parse_report_to(self.report_to)
        except ValueError as exc:
            raise InputError(str(exc)) from None

    @property
    def adapters_root(self) -> Path:
        if self.out is not None:
            return self.out
        return agent_adapters_dir(self.data, self.agent) if self.agent else self.data / "adapters"

    @property
    def resolved_lr(self) -> float:
        return self.lr if self.lr is not None else (2e-4 if self.loss == "sft" else 3e-4)

    @property
    def resolved_epochs(self) -> int:
        return self.epochs if self.epochs is not None else (2 if self.loss == "ppo" else 1)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d = {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}
        d["lr"], d["epochs"] = self.resolved_lr, self.resolved_epochs
        return d


def _flag(name: str) -> str:
    return name.replace("_", "-")


@dataclass
class TrainRunFlags:
    """What one ``spanrl train`` call asks beyond its config (no section, and not recorded in
    training_state.json: where to announce the adapter and how to show progress change no weight)."""

    notify: str | None = knob(None, "vLLM base URL: POST /v1/load_lora_adapter after saving (failure = warning).")
    progress: bool = knob(True, "No progress bar.", flag="--no-progress")
    promote: bool = knob(True, "Save the adapter as a candidate: adapters/LATEST stays (promote it later with "
                         "`spanrl adapters promote ID`).", flag="--no-promote")


@dataclass
class AdapterFlags:
    """The per-call switches of ``spanrl adapters promote|clean`` (no section); their ``--out`` is
    ``TrainConfig.out``."""

    if_better: Path | None = knob(None, "Promote only if this `spanrl eval` eval.json's verdict for CYCLE_ID vs its "
                                  "baseline is better.", click_type=click.Path(dir_okay=False, path_type=Path))
    keep: int | None = knob(None, "Keep the N newest adapters (and every protected one).", required=True, metavar="N")
    dry_run: bool = knob(False, "Say what would be deleted; delete nothing.")


def make_train_config(config_file: Path | None = None, **flags: Any) -> TrainConfig:
    """Flags (None = not given) over ``$SPANRL_DATA`` and the ``[train]`` section over the defaults."""
    return resolve(TrainConfig, {**flags, "config_file": config_file}, "train")
