"""Write and read transition snapshots: temp folder -> rename, manifest, atomic ``LATEST``.

A snapshot is ``transitions/<snapshot_id>/part-*.parquet`` + ``manifest.json``. It becomes
visible only by one ``os.rename`` of a complete folder, and ``LATEST`` only by ``os.replace`` of a
fully written file, so a crash at any point leaves either the old state or the new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spanrl import __version__
from spanrl.errors import InputError
from spanrl.publish import clean_drafts, draft_folder, publish, read_pointer, write_text_atomic
from spanrl.transitions.schema import COLUMNS, SCHEMA_VERSION, TRANSITION_SCHEMA, conform


def transitions_dir(data: Path | str) -> Path:
    return Path(data) / "transitions"


def new_snapshot_id() -> str:
    """Sortable UTC time with microseconds: ``20261122T014500123456Z``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def content_hash(folder: Path) -> str:
    """sha256 over the rows of every part (sorted by name), ``snapshot_id`` excluded.

    Hashing the Arrow data, not the Parquet bytes, makes the hash independent of writer versions
    and compression; the builder writes rows in a deterministic order, so the same lake and config
    give the same hash.
    """
    h = hashlib.sha256(f"spanrl-transitions-v{SCHEMA_VERSION}".encode())
    cols = [c for c in COLUMNS if c != "snapshot_id"]
    for part in sorted(folder.glob("part-*.parquet")):
        table = pq.read_table(part, columns=cols).combine_chunks()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=4096):
                writer.write_batch(batch)
        h.update(sink.getvalue().to_pybytes())
    return h.hexdigest()


@dataclass
class SnapshotDraft:
    """A snapshot being written: parts go into ``tmp_dir``; ``commit`` publishes it."""

    data: Path
    snapshot_id: str
    tmp_dir: Path
    committed: bool = field(default=False)
    _hash: str | None = field(default=None, repr=False)  # of the parts written so far, once asked

    def write_part(self, table: pa.Table, index: int = 0) -> Path:
        path = self.tmp_dir / f"part-{index:05d}.parquet"
        pq.write_table(conform(table), path, compression="zstd")
        self._hash = None
        return path

    def content_hash(self) -> str:
        """``content_hash`` of the parts written so far, computed once (the builder compares it with
        LATEST's, then the manifest records it: one read of the parts, not two)."""
        if self._hash is None:
            self._hash = content_hash(self.tmp_dir)
        return self._hash

    def commit(
        self,
        config: dict[str, Any],
        source_files: list[str],
        stats: dict[str, Any] | None = None,
    ) -> Path:
        """Validate the parts, write the manifest, rename into place, then swap ``LATEST``."""
        parts = sorted(self.tmp_dir.glob("part-*.parquet"))
        rows = 0
        ts_min: Any = None
        ts_max: Any = None
        for part in parts:
            meta = pq.read_schema(part)
            if meta.names != COLUMNS:
                raise ValueError(f"{part}: columns {meta.names} do not match schema v{SCHEMA_VERSION}")
            rows += pq.read_metadata(part).num_rows
        manifest = {
            "snapshot_id": self.snapshot_id,
            "schema_version": SCHEMA_VERSION,
            "spanrl_version": __version__,
            "created_at": datetime.now(UTC).isoformat(),
            "rows": rows,
            "parts": [p.name for p in parts],
            "content_hash": self.content_hash(),
            "config": config,
            "source_files": sorted(source_files),
            "stats": stats or {},
            "min_time_ns": (stats or {}).get("min_time_ns", ts_min),
            "max_time_ns": (stats or {}).get("max_time_ns", ts_max),
        }
        write_text_atomic(self.tmp_dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        final = publish(self.tmp_dir, self.snapshot_id)
        self.committed = True
        return final


@contextmanager
def open_snapshot(data: Path | str, snapshot_id: str | None = None) -> Iterator[SnapshotDraft]:
    """Start a snapshot in a hidden temp folder; removed again if the block raises or never commits."""
    sid = snapshot_id or new_snapshot_id()
    with draft_folder(transitions_dir(data), sid) as tmp:
        yield SnapshotDraft(Path(data), sid, tmp)


def write_snapshot(
    data: Path | str,
    table: pa.Table,
    config: dict[str, Any] | None = None,
    source_files: list[str] | None = None,
    stats: dict[str, Any] | None = None,
) -> Path:
    """Write one in-memory table as a snapshot (``snapshot_id`` column is filled in here)."""
    with open_snapshot(data) as draft:
        sid = pa.array([draft.snapshot_id] * table.num_rows, pa.string())
        if "snapshot_id" in table.column_names:
            table = table.set_column(table.column_names.index("snapshot_id"), "snapshot_id", sid)
        else:
            table = table.append_column("snapshot_id", sid)
        draft.write_part(table)
        return draft.commit(config or {}, source_files or [], stats)


def clean_stale_drafts(data: Path | str, older_than_s: float = 3600.0) -> int:
    """Remove temp folders left by a killed builder (never visible to readers anyway)."""
    return clean_drafts(transitions_dir(data), older_than_s)


def latest_manifest(data: Path | str) -> dict[str, Any] | None:
    """The manifest LATEST points at, or None when there is no (readable) snapshot yet."""
    sid = read_pointer(transitions_dir(data))
    if sid is None:
        return None
    try:
        return read_manifest(transitions_dir(data) / sid)
    except InputError:
        return None


def snapshot_exists(data: Path | str, snapshot_id: str) -> bool:
    return (transitions_dir(data) / snapshot_id / "manifest.json").is_file()


def snapshot_column(data: Path | str, snapshot_id: str, column: str) -> list[Any]:
    """One column of a snapshot's rows (e.g. ``rollout_id`` for ``--new-only``), read part by part."""
    folder = resolve_snapshot(data, snapshot_id)
    return [v for part in sorted(folder.glob("part-*.parquet"))
            for v in pq.read_table(part, columns=[column]).column(column).to_pylist()]


def resolve_snapshot(data: Path | str, ref: str = "LATEST") -> Path:
    """``LATEST`` or an id (or a path to a snapshot folder) -> the snapshot folder."""
    root = transitions_dir(data)
    if ref and Path(ref).is_dir() and (Path(ref) / "manifest.json").exists():
        return Path(ref)
    if ref in (None, "", "LATEST"):
        ref = read_pointer(root)
        if ref is None:
            raise InputError(
                f"{root / 'LATEST'}: no snapshot yet; run `spanrl ingest` (or `spanrl transitions build`) first"
            )
    folder = root / ref
    if not (folder / "manifest.json").is_file():
        raise InputError(f"{folder}: no such snapshot (no manifest.json); list {root} for the ids")
    return folder


def list_snapshots(data: Path | str) -> list[Path]:
    """Every published snapshot folder, newest first (ids sort by time; drafts are hidden)."""
    root = transitions_dir(data)
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if (p / "manifest.json").is_file()), key=lambda p: p.name, reverse=True)


def snapshot_dataset(data: Path | str, ref: str = "LATEST") -> Any:
    """A lazy ``pyarrow.dataset`` over a snapshot's parts (schema-checked manifest): readers that
    filter or project (the web app) scan only what they need instead of loading every row."""
    import pyarrow.dataset as ds

    folder = resolve_snapshot(data, ref)
    manifest = read_manifest(folder)
    return ds.dataset([str(folder / name) for name in manifest.get("parts", [])], schema=TRANSITION_SCHEMA,
                      format="parquet")


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable manifest ({exc}); rebuild with `spanrl transitions build`") from None
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{path}: snapshot schema version {version}, this spanrl reads version {SCHEMA_VERSION}; "
            "rebuild it with `spanrl transitions build` (or use the spanrl release that wrote it)"
        )
    return manifest


def read_snapshot(data: Path | str, ref: str = "LATEST") -> tuple[pa.Table, dict[str, Any]]:
    """Load a snapshot as an Arrow table (schema-checked) plus its manifest."""
    folder = resolve_snapshot(data, ref)
    manifest = read_manifest(folder)
    parts = [folder / name for name in manifest.get("parts", [])]
    tables = []
    for part in parts:
        try:
            tables.append(conform(pq.read_table(part)))
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"{part}: corrupt snapshot part ({exc}); rebuild the snapshot") from None
        except ValueError as exc:
            raise InputError(f"{part}: {exc}; rebuild the snapshot") from None
    table = pa.concat_tables(tables) if tables else TRANSITION_SCHEMA.empty_table()
    if table.num_rows != manifest.get("rows"):
        raise InputError(
            f"{folder}: manifest says {manifest.get('rows')} rows, parts hold {table.num_rows}; rebuild it"
        )
    return table, manifest


def load_snapshot(ref: str = "LATEST", data: Path | str | None = None, as_arrow: bool = False) -> Any:
    """Public reader: a polars DataFrame (default) or an Arrow table of the snapshot's rows."""
    from spanrl.options import resolve_data_root

    table, _ = read_snapshot(resolve_data_root(data), ref)
    if as_arrow:
        return table
    import polars as pl

    return pl.from_arrow(table)
