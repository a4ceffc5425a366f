"""Reading an S3 data root in place (issue 47): ``spanrl sql --data s3://...`` fetches what a query reads,
not the root (docs/scale.md, "Read in place").

The command still runs on a folder, so every check that looks at the root's files by path (which tables
exist, whether the stage-2 build is stale, the config file) works unchanged; but only the small files are
fetched into it (JSON, JSONL, ``LATEST`` pointers, ``spanrl.toml``: each hashed against its name, as a
mirror does). Each Parquet file of the state is a **stand-in**: a sparse file of the object's size and the
writer's mtime that holds no bytes. The datasets the guarded query connection registers
(``spanrl.ingest.views``) ask ``dataset_files`` first, which maps stand-ins to their objects on a
``pyarrow.fs.S3FileSystem``: DuckDB pushes projections and filters into pyarrow's Parquet scan, so only
the footers, column chunks and row groups a query needs are fetched (ranged GETs), and a lake partition's
``date`` is a fragment's partition expression, so a filter on ``date`` skips other nights' objects
without a request. A stand-in read as a file (by code that does not ask here) fails loudly: no Parquet
magic, never a silent answer. Files no reader of ``spanrl sql`` opens (``otel/``, ``adapters/``...) are
not there at all.

Integrity: a reader in place cannot hash an object it reads a part of. The manifest records the ETag of
every object version the writer checked (``rootstate.manifest_body``), so one listing of ``objects/``
tells an object that was overwritten since (a different ETag) from one that is as the writer left it; an
object whose ETag differs (another tool copied it with other multipart sizes, or an older writer recorded
none) is fetched and hashed once, and this machine records the ETag it hashed (``objects.json``). A
damaged object is named with the way back (exit 2) before any query runs.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from spanrl.integrity import VERIFIED, damaged, mismatch
from spanrl.rootstate import OBJECTS, RootState, missing_root, object_key, read_state
from spanrl.storage import ObjectStore, remote_url

NOT_READ = ("otel/", "adapters/", "mlruns/", "tensorboard/", "demo/", "runs/", "models/")  # never opened by sql
FETCHED = ("feedback/",)  # read whole by stage 2's feedback loader, whatever their format: always fetched


def in_place(rel: str) -> bool:
    """Whether the file ``rel`` of a state is read where it lies (every other file the reader needs is fetched)."""
    return rel.endswith(".parquet") and not rel.startswith(FETCHED)
CACHED_READ = 1 << 20  # reads up to this size (footers, small column chunks) are kept for the command's life
CACHE_BUDGET = 64 << 20
_DATE = re.compile(r"date=(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class Remote:
    path: str  # bucket/prefix/objects/<sha256> on the S3 file system
    size: int


class InPlace:
    """One command's view of an S3 root read in place: stand-in path -> object, and the bytes fetched."""

    def __init__(self, store: ObjectStore, state: RootState, root: Path, tails: Path | None = None) -> None:
        self.store, self.state, self.root, self.tails = store, state, root, tails
        self.ranged = 0
        self._lock = threading.Lock()
        self._cache: dict[str, list[tuple[int, bytes]]] = {}
        self._cached = 0
        base = f"{store.bucket}/{store.prefix}/" if store.prefix else f"{store.bucket}/"
        self.files = {str((root / rel).resolve()): Remote(f"{base}{object_key(sha)}", size)
                      for rel, (sha, size) in state.files.items() if in_place(rel)}
        self.fs = _filesystem(self)

    def read(self, native: Any, path: str, offset: int, n: int, size: int) -> bytes:
        """``n`` bytes at ``offset`` of the object at ``path``: from this command's cache, or this machine's
        copy of the object's tail (its footer: objects never change, so a footer fetched once serves every
        later command), else one ranged GET."""
        sha = path.rsplit("/", 1)[-1]
        with self._lock:
            if path not in self._cache and self.tails is not None and (self.tails / sha).is_file():
                tail = (self.tails / sha).read_bytes()
                self._cache[path] = [(size - len(tail), tail)]
            for start, data in self._cache.get(path, ()):
                if start <= offset and offset + n <= start + len(data):
                    return data[offset - start:offset - start + n]
        data = native.read_at(n, offset)
        with self._lock:
            self.ranged += len(data)
            if len(data) <= CACHED_READ and self._cached + len(data) <= CACHE_BUDGET:
                self._cache.setdefault(path, []).append((offset, data))
                self._cached += len(data)
        if self.tails is not None and offset + len(data) == size and len(data) <= CACHED_READ:
            self.tails.mkdir(parents=True, exist_ok=True)
            part = self.tails / f".tmp-{sha}.{os.getpid()}.{threading.get_ident()}"
            part.write_bytes(data)
            os.replace(part, self.tails / sha)
        return data



_active: InPlace | None = None


def active() -> InPlace | None:
    """The root this command reads in place, or None (a local root, or a full mirror)."""
    return _active


def in_place_dataset(files: list[str], fmt: Any, hive: bool) -> Any:
    """A lazy pyarrow dataset over the objects of ``files`` (stand-ins of the root read in place), or None
    when they are real files. ``hive``: each file's ``date=...`` folder is its fragment's partition
    expression (a filter on ``date`` skips the object unread); the schema is the first file's (plus
    ``date``), as ``ds.dataset`` infers it from local files; otherwise the union of all files' schemas."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    view = _active
    if view is None or not files:
        return None
    remote = [view.files.get(str(Path(f).resolve())) for f in files]
    if any(r is None for r in remote):
        return None
    fragments = []
    for f, r in zip(files, remote, strict=True):
        match = _DATE.search(Path(f).parent.name) if hive else None
        expr = ds.field("date") == pa.scalar(date.fromisoformat(match.group(1)), pa.date32()) if match else None
        fragments.append(fmt.make_fragment(r.path, view.fs, partition_expression=expr, file_size=r.size))
    if hive:
        schema = fragments[0].physical_schema.append(pa.field("date", pa.date32()))
    else:
        schema = pa.unify_schemas([f.physical_schema for f in fragments], promote_options="permissive")
    return ds.FileSystemDataset(fragments, schema, fmt, view.fs)


@contextmanager
def in_place_root(url: str) -> Iterator[Path]:
    """The folder a reader of ``url`` runs on, its Parquet read in place for the body's duration; prints
    the bytes fetched on stderr when the body ends."""
    global _active
    import click

    from spanrl.remote import mirror_base, read_mirror

    store = ObjectStore(remote_url(url))
    state = read_state(store)
    if state.etag is None:
        raise missing_root(store.url)
    base = mirror_base(store, write=False, kind="inplace")
    base.mkdir(parents=True, exist_ok=True)
    view: InPlace | None = None
    try:
        with read_mirror(store, base, state, select=_fetched, after=_stand_ins) as root:
            view = InPlace(store, state, root, tails=base / "tails")
            check_objects(store, state, base)
            _active = view
            yield root
    finally:
        _active = None
        click.echo(summary(store, state, view.ranged if view else 0), err=True)


def summary(store: ObjectStore, state: RootState, ranged: int) -> str:
    """``spanrl: fetched 1.2 MB of 40.3 MB (3.0 %) from s3://...``: every body byte this command's GETs read
    (ROOT, the manifest, the small files, ranged reads, objects hashed) against the bytes of the state's
    objects (each object once)."""
    fetched = store.fetched + ranged
    total = sum({sha: size for sha, size in state.files.values()}.values())
    share = 100 * fetched / total if total else 0.0
    return (f"spanrl: fetched {_mb(fetched)} of {_mb(total)} ({share:.1f} %) from {store.url} "
            f"({_mb(store.fetched)} whole: pointer, manifest, small files; {_mb(ranged)} of Parquet ranges)")


def _fetched(rel: str) -> bool:
    return not in_place(rel) and not rel.startswith(NOT_READ)


def _stand_ins(root: Path, state: RootState) -> None:
    """A sparse file of the object's size and the writer's mtime for each Parquet file of ``state``."""
    for rel, (_, size) in state.files.items():
        if not in_place(rel):
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.truncate(size)
        mtime = state.mtimes.get(rel)
        if mtime is not None:
            os.utime(path, ns=(mtime, mtime))


def check_objects(store: ObjectStore, state: RootState, base: Path) -> None:
    """Every Parquet object of ``state`` is the version its writer checked (one listing), or hashes to its
    name (fetched once, then recorded); an InputError naming the first that does neither."""
    record_path = base / VERIFIED
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    listed = store.listing(f"{OBJECTS}/")
    rels: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for rel, (sha, size) in sorted(state.files.items()):
        if in_place(rel):
            rels.setdefault(sha, []).append(rel)
            sizes[sha] = size
    changed = False
    for sha in sorted(rels):
        etag, size = listed.get(object_key(sha), (None, None))
        if etag is not None and size == sizes[sha] and etag in (state.etags.get(sha), record.get(sha)):
            continue
        got = store.fetch(object_key(sha)) if etag is not None else None
        what = mismatch(got, sha, sizes[sha])
        if what is not None or got is None:
            raise damaged(store, sha, rels[sha], what or "is missing", state.manifest or "ROOT")
        record[sha] = got.etag
        changed = True
    if changed:
        tmp = record_path.with_name(f".tmp-{record_path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, record_path)


def _filesystem(view: InPlace) -> Any:
    """A read-only pyarrow file system over the store that counts (and, for small reads, keeps) what it fetches."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    endpoint = view.store.endpoint
    scheme, _, host = endpoint.partition("://")
    s3 = pafs.S3FileSystem(
        access_key=os.environ.get("AWS_ACCESS_KEY_ID"), secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
        session_token=os.environ.get("AWS_SESSION_TOKEN"),
        region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        endpoint_override=host if os.environ.get("AWS_ENDPOINT_URL") else None, scheme=scheme or "https")
    sizes = {r.path: r.size for r in view.files.values()}

    class _Object:
        """The file-like object pyarrow reads one object through (``pa.PythonFile``)."""

        def __init__(self, path: str) -> None:
            self.path, self.size, self.pos, self.closed, self._native = path, sizes[path], 0, False, None

        def read(self, n: int = -1) -> bytes:
            n = self.size - self.pos if n is None or n < 0 else min(n, self.size - self.pos)
            if n <= 0:
                return b""
            if self._native is None:
                self._native = s3.open_input_file(self.path)
            data = view.read(self._native, self.path, self.pos, n, self.size)
            self.pos += len(data)
            return data

        def seek(self, pos: int, whence: int = 0) -> int:
            self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else self.size + pos
            return self.pos

        def tell(self) -> int:
            return self.pos

        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return True

        def writable(self) -> bool:
            return False

        def close(self) -> None:
            self.closed = True
            if self._native is not None:
                self._native.close()

    class _Handler(pafs.FileSystemHandler):
        def get_type_name(self) -> str:
            return "spanrl-in-place"

        def normalize_path(self, path: str) -> str:
            return path

        def equals(self, other: Any) -> bool:
            return other is self

        def get_file_info(self, paths: list[str]) -> list[Any]:
            return [pafs.FileInfo(p, pafs.FileType.File, size=sizes[p]) if p in sizes
                    else pafs.FileInfo(p, pafs.FileType.NotFound) for p in paths]

        def open_input_file(self, path: str) -> Any:
            return pa.PythonFile(_Object(path), mode="r")

        def open_input_stream(self, path: str) -> Any:
            return self.open_input_file(path)

        def _read_only(self, *_: Any) -> Any:
            raise OSError("a root read in place is read-only")

        get_file_info_selector = create_dir = delete_dir = delete_dir_contents = _read_only
        delete_root_dir_contents = delete_file = move = copy_file = _read_only
        open_output_stream = open_append_stream = _read_only

    return pafs.PyFileSystem(_Handler())


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} KB"
