"""Write and read transition snapshots: temp folder -> rename, manifest, atomic ``LATEST``.

A snapshot (schema v3) is ``transitions/<snapshot_id>/``: ``part-*.parquet`` (the rows, in any
split), ``digests.parquet`` (per rollout: task, reward, row count, sha256 of its rows),
``advantages.parquet`` (per rollout: the advantage A_r, when the builder made the snapshot) and
``manifest.json``. A built snapshot's parts are hard links of the stage-2 segments' rows
(``tables.py``): a night's snapshot costs disk for what changed, and the rows of an old rollout are
never rewritten. ``advantage`` is filled by every reader from ``advantages.parquet`` and the
manifest's credit config (``apply_advantages.sql``), so a new rollout, which moves the batch
baseline, changes that small table and not an old row. The content hash covers the digests in
rollout order and the advantages table: it depends on the rows, never on how they are split.
A snapshot becomes visible only by one ``os.rename`` of a complete folder, and ``LATEST`` only by
``os.replace`` of a fully written file, so a crash at any point leaves the old state or the new one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from spanrl import __version__, layout
from spanrl.errors import InputError, resource_trouble
from spanrl.publish import clean_drafts, draft_folder, publish, read_pointer, write_text_atomic
from spanrl.sqlfiles import one, parquet_rows, scratch, sql_literal
from spanrl.transitions.credit import credit_view_sql, with_air_columns
from spanrl.transitions.hashing import register_sha256
from spanrl.transitions.pipeline import DIGEST_STEPS, run_steps
from spanrl.transitions.schema import COLUMNS, SCHEMA_VERSION, conform, transition_schema
from spanrl.transitions.sqlfiles import read_sql

if TYPE_CHECKING:  # pyarrow is imported where a reader needs it: spanrl ingest writes snapshots with DuckDB alone
    import pyarrow as pa

DIGESTS = "digests.parquet"
ADVANTAGES = "advantages.parquet"


def transitions_dir(data: Path | str) -> Path:
    return layout.transitions_dir(data)


def new_snapshot_id() -> str:
    """Sortable UTC time with microseconds: ``20261122T014500123456Z``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def hash_content(con: duckdb.DuckDBPyConnection, digests: str, advantages: str | None, air: bool = False) -> str:
    """A snapshot's content hash (``snapshot/content_hash.sql``) from a digests relation (rollout_id,
    digest) and an advantages relation (rollout_id, a_r; with ``air``, also a_air and air_scale) or
    None (the rows carry their own advantage), both relation names or table-function calls."""
    air_cols = "a_air, air_scale" if air else "NULL::DOUBLE AS a_air, NULL::DOUBLE AS air_scale"
    adv = (f"SELECT rollout_id, a_r, {air_cols} FROM {advantages}" if advantages else
           "SELECT NULL::VARCHAR AS rollout_id, NULL::DOUBLE AS a_r, NULL::DOUBLE AS a_air, NULL::DOUBLE AS air_scale")
    register_sha256(con)  # content_hash.sql calls it
    con.execute(f"CREATE OR REPLACE TEMP VIEW _hash_digests AS SELECT rollout_id, digest FROM {digests}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW _hash_advantages AS {adv}")
    return one(con, read_sql("snapshot/content_hash"), {"schema_version": str(SCHEMA_VERSION)})["content_hash"]


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    """The column names of a relation (a name or a table-function call such as ``_parquet(path)``)."""
    return [d[0] for d in con.execute(f"SELECT * FROM {relation} LIMIT 0").description]


def _has_air_columns(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether an advantages table was written with AIR in the group statistics (a_air, air_scale)."""
    return "air_scale" in _columns(con, _parquet(path))


def _parquet(paths: list[Path] | Path) -> str:
    items = [str(p) for p in paths] if isinstance(paths, list) else str(paths)
    return f"read_parquet({sql_literal(items)}, union_by_name = true)"


def _rows_view(con: duckdb.DuckDBPyConnection, parts: list[Path]) -> None:
    """``transition_rows`` over the parts (an empty table of the schema when there are none)."""
    if parts:
        con.execute(f"CREATE OR REPLACE VIEW transition_rows AS SELECT * FROM {_parquet(parts)}")
    else:
        con.register("transition_rows", transition_schema().empty_table())


def content_hash(folder: Path) -> str:
    """The content hash of a snapshot folder's rows (its parts and advantages table), recomputed."""
    con = duckdb.connect()
    try:
        _rows_view(con, sorted(folder.glob("part-*.parquet")))
        run_steps(con, DIGEST_STEPS, materialize=True)
        adv = folder / ADVANTAGES
        return hash_content(con, "_digests", _parquet(adv) if adv.is_file() else None,
                            adv.is_file() and _has_air_columns(con, adv))
    finally:
        con.close()


@dataclass
class SnapshotDraft:
    """A snapshot being written: parts go into ``tmp_dir``; ``commit`` publishes it."""

    data: Path
    snapshot_id: str
    tmp_dir: Path
    committed: bool = field(default=False)

    def write_part(self, table: pa.Table, index: int | str = 0) -> Path:
        name = f"part-{index:05d}.parquet" if isinstance(index, int) else f"part-{index}.parquet"
        path = self.tmp_dir / name
        import pyarrow.parquet as pq

        pq.write_table(conform(table), path, compression="zstd")
        (self.tmp_dir / DIGESTS).unlink(missing_ok=True)  # computed from the parts again when asked
        return path

    def link_part(self, source: Path, name: str) -> Path:
        """Take a finished Parquet file as part ``name`` by hard link (a copy across file systems)."""
        path = self.tmp_dir / f"part-{name}.parquet"
        try:
            os.link(source, path)
        except OSError:
            shutil.copy2(source, path)
        return path

    def write_index(self, con: duckdb.DuckDBPyConnection, digests: str, advantages: str | None) -> None:
        """COPY the digests (and advantages) SELECTs into the draft: what the hash and readers use."""
        con.execute(f"COPY (SELECT * FROM ({digests}) ORDER BY rollout_id) TO {sql_literal(self.tmp_dir / DIGESTS)} (FORMAT parquet)")
        if advantages is not None:
            con.execute(f"COPY (SELECT * FROM ({advantages}) ORDER BY rollout_id) TO {sql_literal(self.tmp_dir / ADVANTAGES)} "
                        "(FORMAT parquet)")

    def content_hash(self) -> str:
        """The hash from the draft's digests and advantages (digests computed from the parts first
        when no builder wrote them: an in-memory table written with ``write_part``)."""
        con = duckdb.connect()
        try:
            if not (self.tmp_dir / DIGESTS).is_file():
                _rows_view(con, sorted(self.tmp_dir.glob("part-*.parquet")))
                run_steps(con, DIGEST_STEPS, materialize=True)
                self.write_index(con, "SELECT * FROM _digests", None)
            adv = self.tmp_dir / ADVANTAGES
            return hash_content(con, _parquet(self.tmp_dir / DIGESTS), _parquet(adv) if adv.is_file() else None,
                                adv.is_file() and _has_air_columns(con, adv))
        finally:
            con.close()

    def commit(
        self,
        config: dict[str, Any],
        source_files: list[str],
        stats: dict[str, Any] | None = None,
        content_hash: str | None = None,
    ) -> Path:
        """Validate the parts, write the manifest, rename into place, then swap ``LATEST``."""
        parts = sorted(self.tmp_dir.glob("part-*.parquet"))
        rows = 0
        with scratch() as con:
            for part in parts:
                names = _columns(con, _parquet(part))
                if names != COLUMNS:
                    raise ValueError(f"{part}: columns {names} do not match schema v{SCHEMA_VERSION}")
                rows += parquet_rows(con, part)
        manifest = {
            "snapshot_id": self.snapshot_id,
            "schema_version": SCHEMA_VERSION,
            "spanrl_version": __version__,
            "created_at": datetime.now(UTC).isoformat(),
            "rows": rows,
            "parts": [p.name for p in parts],
            "digests": DIGESTS,
            "advantages": ADVANTAGES if (self.tmp_dir / ADVANTAGES).is_file() else None,
            "content_hash": content_hash or self.content_hash(),
            "config": config,
            "source_files": sorted(source_files),
            "stats": stats or {},
            "min_time_ns": (stats or {}).get("min_time_ns"),
            "max_time_ns": (stats or {}).get("max_time_ns"),
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
    """Write one in-memory table as a snapshot (``snapshot_id`` column is filled in here); its rows
    keep the advantages they carry (no advantages table)."""
    import pyarrow as pa

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
    import pyarrow.parquet as pq

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
    return ds.dataset([str(folder / name) for name in manifest.get("parts", [])], schema=transition_schema(),
                      format="parquet")


def register_snapshot(con: duckdb.DuckDBPyConnection, data: Path | str, ref: str, name: str) -> None:
    """A lazy view ``name`` of a snapshot's rows as ``read_snapshot`` returns them (advantage filled
    from the advantages table, the snapshot's own id), for readers that filter instead of loading
    every row (the web app). Parts and advantages are registered Arrow datasets (``name``_rows,
    ``name``_adv), so this works on a connection whose file access is off. ``name``_digests is the
    per-rollout index (rollout_id, task_id, r, n_rows, ...; ``digests.parquet``, in rollout order):
    a page of rollouts reads it instead of grouping every row."""
    import pyarrow.dataset as ds

    folder = resolve_snapshot(data, ref)
    manifest = read_manifest(folder)
    con.register(f"{name}_rows", snapshot_dataset(data, ref))
    con.register(f"{name}_digests", ds.dataset(str(folder / manifest["digests"]), format="parquet"))
    body = f"SELECT * FROM {name}_rows"
    if manifest.get("advantages"):
        config = manifest.get("config") or {}
        adv = ds.dataset(str(folder / manifest["advantages"]), format="parquet")
        con.register(f"{name}_adv_table", adv)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name}_adv AS "
                    + with_air_columns(f"{name}_adv_table", adv.schema.names))
        body = credit_view_sql(config, f"{name}_rows", f"{name}_adv", folder)
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * REPLACE "
                f"({sql_literal(manifest['snapshot_id'])} AS snapshot_id) FROM ({body})")


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
    """Load a snapshot as an Arrow table (schema-checked, in (rollout_id, step) order, ``advantage``
    filled, ``snapshot_id`` the snapshot's own) plus its manifest.

    The rows are digested as they are read (``content_hash``'s rule) and must give the manifest's
    ``content_hash``: a part or the advantages table rewritten after the snapshot was published is
    refused, not trained on. The returned manifest carries the hash of what was really read as
    ``content_hash_read``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = resolve_snapshot(data, ref)
    manifest = read_manifest(folder)
    parts = [folder / name for name in manifest.get("parts", [])]
    con = duckdb.connect()
    try:
        for part in parts:
            try:
                if pq.read_schema(part).names != COLUMNS:
                    raise InputError(f"{part}: columns do not match snapshot schema v{SCHEMA_VERSION}; rebuild the snapshot")
            except (OSError, pa.ArrowException) as exc:
                raise InputError(f"{part}: corrupt snapshot part ({exc}); rebuild the snapshot") from None
        _rows_view(con, parts)
        adv_name = manifest.get("advantages")
        adv = _parquet(folder / adv_name) if adv_name else None
        try:
            run_steps(con, DIGEST_STEPS, materialize=True)
            air = bool(adv_name) and _has_air_columns(con, folder / adv_name)
            read = hash_content(con, "_digests", adv, air)
            n = one(con, "SELECT coalesce(sum(n_rows), 0) AS n FROM _digests")["n"]
        except duckdb.Error as exc:
            if resource_trouble(exc):  # the machine's trouble says nothing about the snapshot: do not rebuild it
                raise InputError(f"{folder}: reading the snapshot stopped ({str(exc).splitlines()[0]}); the snapshot "
                                 "is not known to be bad: free memory or disk space and run it again") from None
            raise InputError(f"{folder}: corrupt snapshot ({str(exc).splitlines()[0]}); rebuild the snapshot") from None
        if n != manifest.get("rows"):
            raise InputError(f"{folder}: manifest says {manifest.get('rows')} rows, parts hold {n}; rebuild it")
        expected = manifest.get("content_hash")
        if read != expected:
            raise InputError(
                f"{folder}: the rows do not match the manifest's content hash (read {read[:16]}, manifest "
                f"{str(expected)[:16]}): a part was changed after the snapshot was written. Rebuild it with "
                "`spanrl transitions build` (or restore the original parts)"
            )
        table = _with_advantages(con, adv, manifest.get("config") or {}, folder)
    finally:
        con.close()
    sid = pa.array([manifest["snapshot_id"]] * table.num_rows, pa.string())
    table = table.set_column(table.column_names.index("snapshot_id"), "snapshot_id", sid)
    return conform(table), {**manifest, "content_hash_read": read}


def _with_advantages(con: duckdb.DuckDBPyConnection, adv: str | None, config: dict[str, Any], folder: Path) -> pa.Table:
    """The rows of ``transition_rows`` in (rollout_id, step) order, advantage from ``adv`` when set."""
    if adv is None:
        return con.sql("SELECT * FROM transition_rows ORDER BY rollout_id, step").to_arrow_table()
    from spanrl.transitions.credit import apply_advantages

    names = _columns(con, adv)
    con.execute("CREATE OR REPLACE TEMP TABLE _rollout_adv AS " + with_air_columns(adv, names))
    return apply_advantages(con, config, folder)


def load_snapshot(ref: str = "LATEST", data: Path | str | None = None, as_arrow: bool = False) -> Any:
    """Public reader: a polars DataFrame (default) or an Arrow table of the snapshot's rows."""
    from spanrl.options import resolve_data_root

    table, _ = read_snapshot(resolve_data_root(data), ref)
    if as_arrow:
        return table
    import polars as pl

    return pl.from_arrow(table)
