"""What ``spanrl export`` is asked for, and what it did."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from spanrl.config import knob
from spanrl.errors import InputError
from spanrl.export.formats import FORMATS, Format

REWARD_COLUMNS = ("return", "final_reward", "advantage")


@dataclass
class ExportConfig:
    """What ``spanrl export`` was asked for (``__post_init__`` refuses options that do not apply). Each
    field is a ``spanrl.config.knob``: the ``spanrl export`` flags are generated from them."""

    data: Path = knob(help="Data root.")
    format: str = knob(help="Dataset format to write.", choices=tuple(FORMATS), required=True)
    out: Path = knob(help="Folder to write (README.md dataset card + train.parquet|jsonl); not under DATA's lake/, "
                          "transitions/, adapters/ or otel/.", required=True, click_type=click.Path(path_type=Path))
    snapshot: str = knob("LATEST", "Snapshot id or LATEST.")
    # None = the format's default (its first file type)
    file_type: str | None = knob(None, "File type [parquet; openai-ft: jsonl only].", choices=("parquet", "jsonl"))
    reward_column: str = knob("return", "Snapshot column used as the reward (filter, KTO label, DPO order).",
                              choices=REWARD_COLUMNS)
    min_reward: float | None = knob(None, "trl-sft / openai-ft: keep rows with reward >= this.")
    threshold: float = knob(0.5, "trl-kto: label = reward >= threshold.")
    tokenizer: Path | None = knob(None, "triplets: local tokenizer folder to render rows that carry text only (else "
                                  "they are left out).", click_type=click.Path(file_okay=False, path_type=Path))
    overwrite: bool = knob(False, "Replace an earlier export in --out.")

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise InputError(f"--format {self.format!r}: choose one of {', '.join(FORMATS)}")
        fmt = FORMATS[self.format]
        self.file_type = self.file_type or fmt.file_types[0]
        if self.file_type not in fmt.file_types:
            raise InputError(f"--file-type {self.file_type}: {fmt.name} writes {' or '.join(fmt.file_types)}")
        if self.reward_column not in REWARD_COLUMNS:
            raise InputError(f"--reward-column {self.reward_column!r}: choose one of {', '.join(REWARD_COLUMNS)}")
        if self.min_reward is not None and "min_reward" not in fmt.params:
            raise InputError(f"--min-reward applies to trl-sft and openai-ft, not {fmt.name}; leave it out")
        if self.tokenizer is not None and fmt.name != "triplets":
            raise InputError(f"--tokenizer applies to --format triplets only, not {fmt.name}; leave it out")

    @property
    def spec(self) -> Format:
        return FORMATS[self.format]


@dataclass
class ExportResult:
    out: Path
    file: Path
    snapshot_id: str
    rows_in: int
    rows_out: int
    left_out: dict[str, int] = field(default_factory=dict)  # drop_reason -> rows
    # agent name -> transitions whose response calls tools but whose row has no tool definitions
    tool_schema_gaps: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        text = (f"exported {self.rows_out} rows from snapshot {self.snapshot_id} "
                f"({self.rows_in} transitions) to {self.file}")
        for reason, n in sorted(self.left_out.items()):
            text += f"\n  left out {n}: {reason}"
        return text

    def warnings(self) -> list[str]:
        """What the user must hear on stderr (and the card repeats): rows a trainer will read wrong."""
        gaps = sum(self.tool_schema_gaps.values())
        if not gaps:
            return []
        per_agent = ", ".join(f"{agent} {n}" for agent, n in self.tool_schema_gaps.items())
        return [f"{gaps} of {self.rows_in} transitions call tools but carry no tool definitions (`tools` is "
                f"empty: the instrumentation did not record the request's tools; by agent: {per_agent}); "
                "a trainer shows the model calls to functions it was never offered. Turn on tool capture in "
                "the instrumentation (docs/lake.md, \"Content coverage\") or leave these rows out."]


def export_options(cfg: ExportConfig) -> dict[str, Any]:
    """The options as the card records them (paths as text, unset ones left out)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items() if v is not None}
