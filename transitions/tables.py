"""The stage-2 tables, stored in segments, and the state an incremental build starts from.

Every build leaves ``transitions/_tables/<build_id>/state.json`` (published atomically with
``_tables/LATEST``; ``spanrl/publish.py``). The state lists the **segments** that hold the tables'
rows: each segment is a folder of Parquet files, one per table (``SEGMENT_TABLES``), covering a set
of whole traces and whole rollouts; a row lives in exactly one segment. A build writes its recomputed
traces as one new segment and rewrites only the older segments that held some of them; every other
segment is referenced from the new state where it lies (in an older build's folder), never copied.
The state also records what the rows were computed from: every lake file (with its clock), every
feedback file, the row-shaping config and the code version (``reuse_key``). docs/incremental.md
explains the design.

``spanrl sql`` and ``spanrl ui`` read the public tables (``PUBLIC``) through ``current_tables``;
when the lake or the feedback moved on since the build, ``freshness`` says what changed and readers
say the tables are stale.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from spanrl import __version__, layout
from spanrl.ingest.lake import PARQUET_OPTIONS  # segments are written as the lake is
from spanrl.publish import draft_folder, publish, read_pointer
from spanrl.sqlfiles import one, parquet_rows, rows, sql_literal
from spanrl.transitions.sqlfiles import render_sql

STATE = "state.json"
STATE_FORMAT = 2
# Per segment: the public tables, the snapshot rows (``transitions``, advantage left to the reader),
# their per-rollout digests, and the bookkeeping the next build needs about these traces.
SEGMENT_TABLES = ("llm_calls", "tool_calls", "rewards", "rollouts", "coverage", "transitions", "digests",
                  "_traces", "_responses")
PUBLIC = ("llm_calls", "tool_calls", "rewards", "rollouts", "coverage")
# Trace-keyed rows leave a segment when their trace is recomputed; the others (rewards, rollouts,
# transitions, digests) are rollout-keyed and leave it when their rollout is.
BY_TRACE = ("llm_calls", "tool_calls", "coverage", "_traces", "_responses")
# How readers find one rollout's rows (spanrl ui, bench/ui.py): by key or by the rollout's time span.
# Each table is written in that order, in the lake's small row groups, so a lookup reads the one row
# group (20480 rows) whose min/max statistics can hold the key instead of the whole table.
ORDER = {"llm_calls": "start_ns, span_id", "tool_calls": "start_ns, span_id", "rewards": "rollout_id, ts_ns",
         "rollouts": "rollout_id"}


def tables_dir(data: Path | str) -> Path:
    return layout.tables_dir(data)


def reuse_key(row_config: dict[str, Any], conventions: Any = None) -> str:
    """What makes stored rows reusable: the row-shaping config, the ``[[conventions]]`` mappings and
    the code that computes rows (this release and the text of every stage-1 call and stage-2 SQL
    file, and the conventions registry with its probes). Any change means a full rebuild, announced;
    never a mix of old and new rows."""
    from spanrl.ingest.lake import CONVENTION_PROBES, LLM_CONVENTIONS

    code = {"registry": LLM_CONVENTIONS, "probes": CONVENTION_PROBES}
    h = hashlib.sha256(json.dumps({"config": canonical(row_config), "conventions": conventions, "spanrl": __version__,
                                   "code": code}, sort_keys=True, default=str).encode())
    for package in ("spanrl.transitions", "spanrl.ingest"):
        root = resources.files(package) / "sql"
        for path in sorted(_sql_files(root), key=str):
            h.update(str(path.relative_to(Path(str(root)))).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def canonical(value: Any) -> Any:
    """A config value as JSON would store it, numbers as floats: ``settle_s = 0`` from spanrl.toml and
    ``--settle 0s`` (0.0) are the same setting, so neither makes a rebuild."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return str(value)


def _sql_files(root: Any) -> list[Path]:
    return [p for p in Path(str(root)).rglob("*.sql")]


def inventory(data: Path | str) -> dict[str, dict[str, list[int]]]:
    """Every lake Parquet file and feedback file of the data root: {relative path: [size, mtime_ns]}."""
    root = Path(data)

    def files(*patterns: str) -> dict[str, list[int]]:
        out = {}
        for pattern in patterns:
            for p in root.glob(pattern):
                if p.is_file():
                    st = p.stat()
                    out[str(p.relative_to(root))] = [st.st_size, st.st_mtime_ns]
        return dict(sorted(out.items()))

    from spanrl.transitions.feedback import feedback_files

    fb = {str(p.relative_to(root)): [p.stat().st_size, p.stat().st_mtime_ns] for p in feedback_files(root)}
    return {"lake": files("lake/spans/*/*.parquet", "lake/logs/*/*.parquet"), "feedback": fb}


def load_state(data: Path | str) -> dict[str, Any] | None:
    """The latest build's state (None before the first build, or for a layout this release does
    not continue from: the caller rebuilds in full)."""
    build = read_pointer(tables_dir(data))
    if build is None:
        return None
    try:
        state = json.loads((tables_dir(data) / build / STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return state if state.get("format") == STATE_FORMAT else {"format": state.get("format"), "stale_format": True}


def segment_files(data: Path | str, state: dict[str, Any], table: str) -> list[Path]:
    """The Parquet files of ``table`` over every segment of ``state`` that has it."""
    root = tables_dir(data)
    out = []
    for folder in state.get("segments", {}).values():
        path = root / folder / f"{table}.parquet"
        if path.is_file():
            out.append(path)
    return out


def global_file(data: Path | str, state: dict[str, Any], table: str) -> Path | None:
    rel = state.get("global", {}).get(table)
    path = tables_dir(data) / rel if rel else None
    return path if path is not None and path.is_file() else None


def write_segment(con: duckdb.DuckDBPyConnection, folder: Path, sources: dict[str, str], ordered: bool = True) -> int:
    """COPY each ``{table: SELECT}`` into ``folder/<table>.parquet``; the rollouts written.
    ``ordered=False`` (a merge of segments that are each sorted already) streams without a sort: an
    output row group holds rows of one input, or of two where one input ends (the builder keeps no
    insertion order, so the threads' row groups come out in any order), and lookups by min/max
    statistics stay about as selective."""
    folder.mkdir(parents=True, exist_ok=True)
    for table, select in sources.items():
        if ordered and table in ORDER:
            select = f"SELECT * FROM ({select}) ORDER BY {ORDER[table]}"
        con.execute(f"COPY ({select}) TO {sql_literal(folder / f'{table}.parquet')} ({PARQUET_OPTIONS})")
    return one(con, "SELECT count(*) AS n FROM read_parquet($file)", {"file": str(folder / "rollouts.parquet")})["n"]


def publish_build(build_id: str, data: Path | str, write: Any, state: dict[str, Any]) -> Path:
    """Create ``_tables/<build_id>`` through a draft: ``write(tmp_folder)`` fills it (and returns the
    segments it wrote), then the state is written and the folder published with LATEST; build
    folders no state of the last two builds references are removed."""
    root = tables_dir(data)
    previous = load_state(data) or {}
    with draft_folder(root, build_id) as tmp:
        write(tmp)
        (tmp / STATE).write_text(json.dumps(state, indent=1, sort_keys=True, default=str))
        final = publish(tmp, build_id)
    keep = {build_id} | {f.split("/")[0] for s in (state, previous) for f in
                         list(s.get("segments", {}).values()) + list(s.get("global", {}).values())}
    keep.add(str(previous.get("build_id")))
    for old in root.iterdir():
        if old.is_dir() and old.name not in keep and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    return final


MERGE_FANOUT = 16  # this many segments of one size tier are merged into one (an LSM-style tiering)


def merge_segments(con: duckdb.DuckDBPyConnection, data: Path | str, tmp: Path, build_id: str,
                   state: dict[str, Any]) -> int:
    """Keep the number of segments logarithmic in the lake's age: when ``MERGE_FANOUT`` segments
    hold a similar number of traces (the same power-of-``MERGE_FANOUT`` tier), their rows are
    concatenated into one segment in ``tmp`` (a Parquet read and write, nothing recomputed). Each
    row is so rewritten about log8(nights) times over the lake's life, and a reader never opens more
    than ~7 segments per tier. Updates ``state['segments']``; the number of segments merged."""
    import math

    root = tables_dir(data)

    def where(seg: str) -> Path:  # this build's own segments are still in its draft folder
        head, _, rest = state["segments"][seg].partition("/")
        return tmp / rest if head == build_id else root / head / rest

    tiers: dict[int, list[str]] = {}
    for seg in state["segments"]:
        traces = where(seg) / "_traces.parquet"
        if not traces.is_file():  # one-segment builds of other tools carry no bookkeeping: left alone
            continue
        n = parquet_rows(con, traces)
        tiers.setdefault(int(math.log(max(n, 1), MERGE_FANOUT)), []).append(seg)
    merged = 0
    for tier, segs in sorted(tiers.items()):
        if len(segs) < MERGE_FANOUT:
            continue
        new_id = f"{build_id}-m{tier}"
        sources = {}
        for table in SEGMENT_TABLES:
            files = [str(where(s) / f"{table}.parquet") for s in sorted(segs)]
            files = [f for f in files if Path(f).is_file()]
            if files:
                sources[table] = render_sql("tables/merged_rows", files=files)
        write_segment(con, tmp / new_id, sources, ordered=False)
        for seg in segs:
            if where(seg).is_relative_to(tmp):  # written by this build, now merged: not published
                shutil.rmtree(where(seg), ignore_errors=True)
            del state["segments"][seg]
        state["segments"][new_id] = f"{build_id}/{new_id}"
        merged += len(segs)
    return merged


def write_tables(con: duckdb.DuckDBPyConnection, data: Path | str, build_id: str, config: dict[str, Any]) -> Path:
    """A one-segment build of the public tables present on ``con`` (bench lakes, tests): what a full
    build stores, minus the snapshot rows and the bookkeeping an incremental build needs (so the
    next ``spanrl ingest`` over such a root rebuilds in full)."""
    have = {r["table_name"] for r in rows(con, "SELECT table_name FROM information_schema.tables")}

    def write(tmp: Path) -> None:
        write_segment(con, tmp / build_id, {n: f"SELECT * FROM {n}" for n in PUBLIC if n in have})

    state = {"format": STATE_FORMAT, "build_id": build_id, "config": config, "reuse_key": None,
             "segments": {build_id: f"{build_id}/{build_id}"}, "global": {}, **inventory(data)}
    return publish_build(build_id, data, write, state)


def current_tables(data: Path | str) -> tuple[dict[str, list[Path]], list[str]]:
    """({public table: its Parquet files} of the latest build, what changed since it: [] when current).

    Empty when no build materialised tables yet (readers fall back to computing the views)."""
    state = load_state(data)
    if not state or state.get("stale_format"):
        return {}, []
    paths: dict[str, list[Path]] = {}
    for name in PUBLIC:
        files = segment_files(data, state, name)
        if name == "rewards" and (fb := global_file(data, state, "feedback_rewards")) is not None:
            files.append(fb)
        if files:
            paths[name] = files
    if (quarantined := global_file(data, state, "quarantine")) is not None:  # traces stage 2 failed on
        paths["quarantine"] = [quarantined]
    return paths, freshness(state, inventory(data))


def freshness(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Human-readable differences between the files the tables were built from and the files now."""
    changes = []
    for key, what in (("lake", "lake file"), ("feedback", "feedback file")):
        before = {k: list(v[:2]) for k, v in _as_map(recorded.get(key)).items()}
        after = {k: list(v[:2]) for k, v in _as_map(now.get(key)).items()}
        new = [n for n in after if n not in before or after[n] != before[n]]
        gone = [n for n in before if n not in after]
        if new:
            changes.append(f"{len(new)} new or changed {what}(s), e.g. {new[0]}")
        if gone:
            changes.append(f"{len(gone)} {what}(s) gone, e.g. {gone[0]}")
    return changes


def _as_map(files: Any) -> dict[str, list[Any]]:
    """Inventory entries as {path: [size, mtime, ...]} (format 1 stored [[path, size, mtime], ...])."""
    if isinstance(files, dict):
        return files
    return {f[0]: list(f[1:]) for f in files or []}


def register_build_views(con: duckdb.DuckDBPyConnection, data: Path, state: dict[str, Any]) -> None:
    """``pipeline.PUBLISH_STEPS``: views over every segment of ``state`` (rollouts, _traces, _digests,
    coverage, llm_calls, rewards with the whole-lake feedback rows, _feedback_detail; ``sql/tables/``):
    what the summary and the snapshot read (then ``pipeline.SNAPSHOT_STEPS``)."""
    from spanrl.transitions.pipeline import PUBLISH_STEPS, run_steps

    files = {name: [str(p) for p in segment_files(data, state, table)]
             for name, table in (("rollouts", "rollouts"), ("_traces", "_traces"), ("_digests", "digests"),
                                 ("coverage", "coverage"), ("llm_calls", "llm_calls"), ("segment_rewards", "rewards"),
                                 ("transition_rows", "transitions"))}
    for name, table in (("rewards", "feedback_rewards"), ("_feedback_detail", "_feedback_detail")):
        path = global_file(data, state, table)
        files[name] = [str(path)] if path else []
    run_steps(con, PUBLISH_STEPS, materialize=False, files=files)


def rewrite_touched(con: duckdb.DuckDBPyConnection, data: Path, tmp: Path, build_id: str,
                     state: dict[str, Any]) -> set[str]:
    """Older segments holding a recomputed trace or rollout (``_touched``, and ``_touched_rollouts`` made
    here from ``rollouts``: a night's, one process's or its shards'), written again into ``tmp`` without
    those rows; ``state['segments']`` updated, the segments rewritten returned."""
    from spanrl.transitions.pipeline import REWRITE_STEPS, run_steps

    run_steps(con, REWRITE_STEPS, materialize=True)
    root = tables_dir(data)
    rewritten = set()
    for seg, folder in sorted(state["segments"].items()):
        traces = root / folder / "_traces.parquet"
        rollouts = root / folder / "rollouts.parquet"
        if not one(con, render_sql("segments/segment_hits", traces=traces, rollouts=rollouts))["hits"]:
            continue
        out = tmp / seg
        sources = {}
        for table in SEGMENT_TABLES:
            src = root / folder / f"{table}.parquet"
            if src.is_file():
                keyed = ("trace_id", "_touched") if table in BY_TRACE else ("rollout_id", "_touched_rollouts")
                sources[table] = (f"SELECT * FROM read_parquet({sql_literal(str(src))}) "
                                  f"ANTI JOIN {keyed[1]} USING ({keyed[0]})")
        left = write_segment(con, out, sources)
        if left or parquet_rows(con, out / "_traces.parquet"):
            state["segments"][seg] = f"{build_id}/{seg}"
        else:
            del state["segments"][seg]
        rewritten.add(seg)
    return rewritten
