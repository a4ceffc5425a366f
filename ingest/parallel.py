"""Stage 1 on workers (``spanrl ingest --workers N``, docs/scale.md): the planned span files in N
groups of about equal bytes, each staged by a Ray task exactly as the driver would stage it
(``ingest/load.py``'s own functions, handed over so this module does not import the loader).

A task returns its staged Parquet as bytes (the Ray object store carries them), so nothing depends on
a worker's disk; the driver writes them into its staging folder and goes on as a one-process run does:
dedupe against the run and the lake, publish, record the file state. The lake holds the same rows,
so the snapshot's content hash is the one-process hash (tests/test_remote.py).

Span objects (``--input s3://``) are not fetched by the driver: it lists them and decides which are new
(``plan_objects(fetch=False)``), and each task GETs its own from the store, with the driver's endpoint
and its own environment's credentials, into a temp folder of its own; what it fetched comes back with
its results, so the driver records the object as a one-process run would. Such a task may run on any
node that reaches the store (tests/ingest/test_parallel_objects.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from spanrl.ingest.config import LakeConfig
from spanrl.ingest.objects import ListedObject, fetch_listed, is_object_url, open_store, store_place
from spanrl.ingest.scan import Reject, SpanFile, close_planned

Staged = tuple[tuple[int, int] | None, list[str], list[Reject], SpanFile | None]


def stage_on_workers(cfg: LakeConfig, plan: list[SpanFile], staging: Path, params: dict, connect: Callable,
                     stage_one: Callable) -> dict[int, Staged]:
    """``--workers N``: the planned files in N groups of about equal bytes, each staged by a worker
    (``stage_group``, Ray) exactly as this process would; their staged Parquet comes back as bytes
    and is written under ``staging`` here, so dedupe, publish and the file state stay the driver's.
    Per planned index: counts (None: nothing to record), warnings, rejects, and for an object the task
    fetched, the item as fetched (what the file state records)."""
    from spanrl.workers import split_evenly, worker_pool

    groups = split_evenly([max(item.end - item.start, 0) for item in plan], int(cfg.workers or 1))
    place = store_place() if is_object_url(cfg.input) else None  # endpoint and region: nothing secret
    calls = [(cfg, [(i, plan[i]) for i in group], params, os.getpid(), place, connect, stage_one) for group in groups]
    with worker_pool(cfg.workers) as run:
        results = [r for group in run(stage_group, calls) for r in group]
    staged = {}
    for r in results:
        out = staging / f"{r['i']:06d}"
        for rel, body in r["files"].items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(body)
        staged[r["i"]] = (r["counts"], r["warnings"], r["rejects"], r["fetched"])
    return staged


def stage_group(cfg: LakeConfig, items: list[tuple[int, SpanFile]], params: dict, driver_pid: int,
                place: dict[str, str | None] | None, connect: Callable, stage_one: Callable) -> list[dict]:
    """A worker's share of stage 1 (a Ray task): stage each planned file into a private folder with
    its own DuckDB connection, and return per file its counts, warnings, rejects and staged Parquet.
    A listed object is first fetched from the store at ``place`` into that folder (``fetch_listed``),
    with this worker's own credentials; one gone since the listing is a warning and nothing staged."""
    from spanrl.remote_tasks import forbid_root_for_tests

    forbid_root_for_tests(driver_pid)  # tests only: this task may not read under the driver's root
    work = Path(tempfile.mkdtemp(prefix="spanrl-stage1-"))
    con = connect(cfg, work / "tmp")
    store = None
    results = []
    try:
        for i, item in items:
            warnings: list[str] = []
            fetched = None
            if isinstance(item, ListedObject):
                if store is None:
                    store = open_store(str(cfg.input), place)
                item = fetched = fetch_listed(store, item, work / f"object-{i}", warnings)
                if item is None:
                    results.append({"i": i, "counts": None, "warnings": warnings, "rejects": [], "files": {},
                                    "fetched": None})
                    continue
            else:
                item.fd = _reopen(item)
            out = work / f"{i:06d}"
            try:
                counts = stage_one(con, item, out, work / f"work-{i}", params, warnings)
            finally:
                close_planned(item)
            files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.parquet")} if counts else {}
            results.append({"i": i, "counts": counts, "warnings": warnings, "rejects": item.rejects, "files": files,
                            "fetched": fetched})
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)
    return results


def _reopen(item: SpanFile) -> int | None:
    """In a worker: a read handle on the very file the driver planned (same inode), or None when it
    was replaced since (the caller then records nothing, as for a file replaced before it was read).
    A local span file is read at the driver's path: a worker on the driver's machine, or on a node that
    shares that file system (docs/scale.md)."""
    try:
        fd = os.open(item.path, os.O_RDONLY)
    except OSError:
        return None
    st = os.fstat(fd)
    if item.inode != (0, 0) and (st.st_dev, st.st_ino) != tuple(item.inode):
        os.close(fd)
        return None
    return fd
