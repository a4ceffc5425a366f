"""Snapshot -> dataset folder another trainer loads directly (``spanrl export``).

Reads a snapshot only through ``spanrl.transitions.read_snapshot``, registers it in DuckDB, runs
the format's one SQL statement (``export/sql/<format>.sql``: every row comes back with a
``drop_reason``, NULL when it is exported), writes the kept rows with DuckDB's ``COPY`` (Parquet or
JSON lines), counts the others by reason, and writes a dataset card. The folder is built beside
``--out`` and renamed into place, so a failed export leaves nothing half written.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from spanrl.errors import InputError
from spanrl.export.card import CARD_MARKER, write_card
from spanrl.export.formats import FORMATS, Format
from spanrl.transitions import read_snapshot

MANAGED_FOLDERS = ("lake", "transitions", "adapters", "otel")  # what spanrl itself writes under --data
REWARD_COLUMNS = ("return", "final_reward", "advantage")
RENDERED_SCHEMA = pa.schema([("rollout_id", pa.string()), ("step", pa.int32()),
                             ("prompt_token_ids", pa.list_(pa.int32())), ("response_token_ids", pa.list_(pa.int32())),
                             ("render_error", pa.string())])


@dataclass
class ExportConfig:
    """What ``spanrl export`` was asked for (``__post_init__`` refuses options that do not apply)."""

    data: Path
    format: str
    out: Path
    snapshot: str = "LATEST"
    file_type: str | None = None  # parquet | jsonl; None = the format's default
    reward_column: str = "return"
    min_reward: float | None = None  # trl-sft, openai-ft
    threshold: float = 0.5  # trl-kto: label = reward >= threshold
    tokenizer: Path | None = None  # triplets: render text-only rows
    overwrite: bool = False

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

    def summary(self) -> str:
        text = (f"exported {self.rows_out} rows from snapshot {self.snapshot_id} "
                f"({self.rows_in} transitions) to {self.file}")
        for reason, n in sorted(self.left_out.items()):
            text += f"\n  left out {n}: {reason}"
        return text


def check_out_dir(cfg: ExportConfig) -> None:
    """Refuse an ``--out`` that would write into (or replace) what spanrl manages under ``--data``."""
    out, data = cfg.out.resolve(), cfg.data.resolve()
    if out == data or data.is_relative_to(out):
        raise InputError(f"--out {cfg.out}: this is (or contains) the data root {cfg.data}; pick a folder of its own")
    for name in MANAGED_FOLDERS:
        if out.is_relative_to(data / name):
            raise InputError(f"--out {cfg.out}: inside {data / name}, which spanrl manages; "
                             f"write the export elsewhere (e.g. {data / 'exports' / cfg.format})")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {cfg.out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        card = out / "README.md"
        if not cfg.overwrite:
            raise InputError(f"--out {cfg.out}: not empty; pass --overwrite to replace an earlier export, "
                             "or pick a new folder")
        if not (card.is_file() and CARD_MARKER in card.read_text(errors="replace")):
            raise InputError(f"--out {cfg.out}: not empty and not an earlier spanrl export; "
                             "--overwrite only replaces those, pick a new folder")


def _sql(name: str) -> str:
    return resources.files("spanrl.export").joinpath("sql", f"{name}.sql").read_text()


def _rendered(cfg: ExportConfig, table: pa.Table, con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Token ids for the text-only rows (triplets with ``--tokenizer``); an empty table otherwise."""
    if cfg.tokenizer is None:
        return RENDERED_SCHEMA.empty_table()
    from spanrl.export.tokens import load_tokenizer, render_rows

    tokenizer = load_tokenizer(cfg.tokenizer)
    text_rows = con.sql(
        "SELECT rollout_id, step, prompt_messages, tools, response_message FROM transitions "
        "WHERE NOT coalesce(len(prompt_token_ids) > 0 AND len(response_token_ids) > 0, false)").to_arrow_table()
    return pa.Table.from_pylist(render_rows(text_rows.to_pylist(), tokenizer), schema=RENDERED_SCHEMA)


def _copy(con: duckdb.DuckDBPyConnection, fmt: Format, file_type: str, path: Path) -> None:
    """Write the kept rows: DuckDB's COPY, or (one-JSON-per-line formats) that column as the line."""
    if fmt.line_column:
        cursor = con.execute(f'SELECT CAST("{fmt.line_column}" AS VARCHAR) FROM _export_rows '
                             "WHERE drop_reason IS NULL")
        with open(path, "w", encoding="utf-8") as fh:
            while batch := cursor.fetchmany(10_000):
                fh.write("".join(line + "\n" for (line,) in batch))
        return
    target = "'" + str(path).replace("'", "''") + "'"
    options = "FORMAT parquet, COMPRESSION zstd" if file_type == "parquet" else "FORMAT json"
    con.execute(f"COPY (SELECT * EXCLUDE (drop_reason) FROM _export_rows WHERE drop_reason IS NULL) "
                f"TO {target} ({options})")


def export_snapshot(cfg: ExportConfig) -> ExportResult:
    """Write ``cfg.snapshot`` as a ``cfg.format`` dataset under ``cfg.out`` (README.md + train.*)."""
    check_out_dir(cfg)
    fmt = cfg.spec
    table, manifest = read_snapshot(cfg.data, cfg.snapshot)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.register("transitions", table)
    con.register("_rendered", _rendered(cfg, table, con))
    con.execute(_sql("macros"))
    params = {k: v for k, v in asdict(cfg).items() if k in fmt.params}
    con.execute(f"CREATE TEMP TABLE _export_rows AS {_sql(fmt.sql)}", params)
    counts = dict(con.execute("SELECT coalesce(drop_reason, ''), count(*) FROM _export_rows GROUP BY 1").fetchall())
    rows_out = counts.pop("", 0)
    if rows_out == 0:
        reasons = "; ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "the snapshot has no rows"
        raise InputError(f"snapshot {manifest['snapshot_id']}: nothing to export as {fmt.name} ({reasons})")

    out = cfg.out.resolve()
    tmp = out.with_name(f".tmp-{out.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        data_file = tmp / f"train.{cfg.file_type}"
        _copy(con, fmt, cfg.file_type, data_file)
        types = con.execute("SELECT column_name, column_type FROM (DESCRIBE _export_rows)").fetchall()
        result = ExportResult(out=out, file=out / data_file.name, snapshot_id=manifest["snapshot_id"],
                              rows_in=table.num_rows, rows_out=rows_out, left_out=counts)
        write_card(tmp / "README.md", cfg, result, manifest, dict(types))
        if out.exists():
            shutil.rmtree(out)  # check_out_dir allowed it: empty, or an earlier export with --overwrite
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def export_options(cfg: ExportConfig) -> dict[str, Any]:
    """The options as the card records them (paths as text, unset ones left out)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items() if v is not None}
