"""Snapshot -> dataset folder another trainer loads directly (``spanrl export``).

Reads a snapshot only through ``spanrl.transitions.read_snapshot``, registers it in DuckDB, runs
the format's one SQL statement (``export/sql/<format>.sql``: every row comes back with a
``drop_reason``, NULL when it is exported), writes the kept rows with DuckDB's ``COPY`` (Parquet or
JSON lines), counts the others by reason, and writes a dataset card. The folder is built in a hidden
draft beside ``--out`` (``spanrl.publish.draft_folder``) and renamed into place, so a failed export
leaves nothing half written.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

import duckdb
import pyarrow as pa

from spanrl.errors import InputError
from spanrl.export.card import CARD_MARKER, write_card
from spanrl.export.config import ExportConfig, ExportResult
from spanrl.export.formats import Format
from spanrl.layout import MANAGED_FOLDERS  # what spanrl itself writes under --data
from spanrl.publish import draft_folder
from spanrl.sqlfiles import SqlFiles, sql_literal
from spanrl.transitions import read_snapshot

RENDERED_SCHEMA = pa.schema([("rollout_id", pa.string()), ("step", pa.int32()),
                             ("prompt_token_ids", pa.list_(pa.int32())), ("response_token_ids", pa.list_(pa.int32())),
                             ("render_error", pa.string())])


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


_SQL = SqlFiles("spanrl.export")


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


def _footer(manifest: dict) -> str:
    """The snapshot's identity as Parquet key-value metadata (a DuckDB struct literal of strings)."""
    config = manifest.get("config") or {}
    values = {"spanrl.snapshot_id": manifest.get("snapshot_id"), "spanrl.content_hash": manifest.get("content_hash"),
              "spanrl.schema_version": manifest.get("schema_version"),
              "spanrl.config": json.dumps({k: config.get(k) for k in ("credit", "gamma", "advantage") if k in config},
                                          sort_keys=True)}
    return "{" + ", ".join(f"{sql_literal(k)}: {sql_literal(str(v))}" for k, v in values.items() if v is not None) + "}"


def _copy(con: duckdb.DuckDBPyConnection, fmt: Format, file_type: str, path: Path, manifest: dict) -> None:
    """Write the kept rows: DuckDB's COPY, or (one-JSON-per-line formats) that column as the line."""
    if fmt.line_column:
        cursor = con.execute(f'SELECT CAST("{fmt.line_column}" AS VARCHAR) FROM _export_rows '
                             "WHERE drop_reason IS NULL")
        with open(path, "w", encoding="utf-8") as fh:
            while batch := cursor.fetchmany(10_000):
                fh.write("".join(line + "\n" for (line,) in batch))
        return
    options = "FORMAT parquet, COMPRESSION zstd" if file_type == "parquet" else "FORMAT json"
    if fmt.metadata and file_type == "parquet":
        options += f", KV_METADATA {_footer(manifest)}"
    con.execute(f"COPY (SELECT * EXCLUDE (drop_reason) FROM _export_rows WHERE drop_reason IS NULL) "
                f"TO {sql_literal(path)} ({options})")


def export_snapshot(cfg: ExportConfig) -> ExportResult:
    """Write ``cfg.snapshot`` as a ``cfg.format`` dataset under ``cfg.out`` (README.md + train.*)."""
    check_out_dir(cfg)
    fmt = cfg.spec
    table, manifest = read_snapshot(cfg.data, cfg.snapshot)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.register("transitions", table)
    con.register("_rendered", _rendered(cfg, table, con))
    con.execute(_SQL.read("macros"))
    params = {k: v for k, v in asdict(cfg).items() if k in fmt.params}
    con.execute(f"CREATE TEMP TABLE _export_rows AS {_SQL.read(fmt.sql)}", params)
    counts = dict(con.execute("SELECT coalesce(drop_reason, ''), count(*) FROM _export_rows GROUP BY 1").fetchall())
    schema_gaps = dict(con.execute(_SQL.read("tool_schema_gaps")).fetchall())
    rows_out = counts.pop("", 0)
    if rows_out == 0:
        reasons = "; ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "the snapshot has no rows"
        raise InputError(f"snapshot {manifest['snapshot_id']}: nothing to export as {fmt.name} ({reasons})")

    out = cfg.out.resolve()
    with draft_folder(out.parent, f"{out.name}-{os.getpid()}") as tmp:
        data_file = tmp / f"train.{cfg.file_type}"
        _copy(con, fmt, cfg.file_type, data_file, manifest)
        types = con.execute("SELECT column_name, column_type FROM (DESCRIBE _export_rows)").fetchall()
        result = ExportResult(out=out, file=out / data_file.name, snapshot_id=manifest["snapshot_id"],
                              rows_in=table.num_rows, rows_out=rows_out, left_out=counts,
                              tool_schema_gaps=schema_gaps)
        write_card(tmp / "README.md", cfg, result, manifest, dict(types))
        if out.exists():
            shutil.rmtree(out)  # check_out_dir allowed it: empty, or an earlier export with --overwrite
        os.rename(tmp, out)
    return result
