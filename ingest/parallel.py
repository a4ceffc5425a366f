"""Stage 1 on workers (``spanrl ingest --workers N``, docs/scale.md): the planned span files in N
groups of about equal bytes, each staged by a Ray task exactly as the driver would stage it
(``ingest/load.py``'s own functions, handed over so this module does not import the loader).

A task returns its staged Parquet as bytes (the Ray object store carries them), so nothing depends on
a worker's disk; the driver writes them into its staging folder and goes on as a one-process run does:
dedupe against the run and the lake, publish, record the file state. The lake holds the same rows,
so the snapshot's content hash is the one-process hash (tests/test_remote.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from spanrl.errors import InputError
from spanrl.ingest.config import LakeConfig
from spanrl.ingest.scan import Reject, SpanFile, close_planned


def stage_on_workers(cfg: LakeConfig, plan: list[SpanFile], staging: Path, params: dict, connect: Callable,
                     stage_one: Callable) -> dict[int, tuple[tuple[int, int] | None, list[str], list[Reject]]]:
    """``--workers N``: the planned files in N groups of about equal bytes, each staged by a worker
    (``stage_group``, Ray) exactly as this process would; their staged Parquet comes back as bytes
    and is written under ``staging`` here, so dedupe, publish and the file state stay the driver's."""
    from spanrl.workers import split_evenly, worker_pool

    groups = split_evenly([max(item.end - item.start, 0) for item in plan], int(cfg.workers or 1))
    host = os.uname().nodename
    calls = [(cfg, [(i, plan[i]) for i in group], params, host, os.getpid(), connect, stage_one) for group in groups]
    with worker_pool(cfg.workers) as run:
        results = [r for group in run(stage_group, calls) for r in group]
    staged = {}
    for r in results:
        out = staging / f"{r['i']:06d}"
        for rel, body in r["files"].items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(body)
        staged[r["i"]] = (r["counts"], r["warnings"], r["rejects"])
    return staged


def stage_group(cfg: LakeConfig, items: list[tuple[int, SpanFile]], params: dict, host: str, driver_pid: int,
                connect: Callable, stage_one: Callable) -> list[dict]:
    """A worker's share of stage 1 (a Ray task): stage each planned file into a private folder with
    its own DuckDB connection, and return per file its counts, warnings, rejects and staged Parquet."""
    work = Path(tempfile.mkdtemp(prefix="spanrl-stage1-"))
    con = connect(cfg, work / "tmp")
    results = []
    try:
        for i, item in items:
            warnings: list[str] = []
            item.fd = _reopen(item, host, driver_pid)
            out = work / f"{i:06d}"
            counts = stage_one(con, item, out, work / f"work-{i}", params, warnings)
            close_planned(item)
            files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.parquet")} if counts else {}
            results.append({"i": i, "counts": counts, "warnings": warnings, "rejects": item.rejects, "files": files})
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)
    return results


def _reopen(item: SpanFile, host: str, driver_pid: int) -> int | None:
    """In a worker: a read handle on the very file the driver planned (same inode), or None when it
    was replaced since (the caller then records nothing, as for a file replaced before it was read).
    A fetched S3 object lives only behind the driver's handle: a worker on the driver's machine reads
    it there; one on another machine cannot (docs/scale.md)."""
    if not isinstance(item.path, Path) or str(item.path).startswith("s3:"):
        if os.uname().nodename != host or item.fd is None:
            raise InputError(f"{item.path}: an object fetched by the driver can be staged only by a worker on "
                             "the driver's machine; run without RAY_ADDRESS (a local cluster) or without --workers")
        return os.open(f"/proc/{driver_pid}/fd/{item.fd}", os.O_RDONLY)
    try:
        fd = os.open(item.path, os.O_RDONLY)
    except OSError:
        return None
    st = os.fstat(fd)
    if item.inode != (0, 0) and (st.st_dev, st.st_ino) != tuple(item.inode):
        os.close(fd)
        return None
    return fd
