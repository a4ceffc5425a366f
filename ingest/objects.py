"""Span objects on S3-compatible storage, as the OTel Collector's ``awss3exporter`` writes them
(``--input s3://BUCKET/PREFIX/``, docs/object-storage.md).

The exporter writes ``<prefix>/year=%Y/month=%m/day=%d/hour=%H/minute=%M/traces_<random>.json``
(``otlp_json``: one ExportTraceServiceRequest per object) or ``....binpb`` (``otlp_proto``: one
unframed protobuf message per object), with ``.gz`` appended under gzip compression; ``logs_...``
alike. An object is written once and never grows, so it is a *closed* file of the lake manifest:
``lake/_files.parquet`` records it under its ``s3://`` URL, its size and a version
``<ETag>@<LastModified ns>``. Planning is one listing: an object whose URL, size and LastModified
match its record is done; any other (new, or rewritten under the same key) is fetched to a private
temp file (gunzipped, a protobuf message given the 4-byte length frame of ``format: proto``) and
handed to the same decode/load path as a local span file, so rejects, dedupe and the rest behave
identically.

With ``--workers N`` the driver only lists and decides (``plan_objects(fetch=False)``: ``ListedObject``s);
each stage-1 task GETs its own objects (``fetch_listed``, the same ``_fetch``) into a temp folder of its
own, so its worker shares nothing with the driver but the store (ingest/parallel.py, docs/scale.md).

pyarrow's ``S3FileSystem`` does the listing and the GET (no boto3: the listing already gives size
and LastModified, and the ETag comes with the GET's response headers), reading the standard
``AWS_*`` variables or profile.
"""

from __future__ import annotations

import gzip
import os
import re
import struct
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

from spanrl.errors import InputError
from spanrl.ingest.scan import FINGERPRINT_BYTES, Reject, SpanFile, _fingerprint_fd, _open_file_budget

# traces_<random>.json, logs_<random>.binpb.gz (a file_prefix may come before the signal name)
_OBJECT_NAME = re.compile(r"(?:^|[^a-z])(traces|logs)_[^/]*\.(json|binpb)(\.gz)?$")


class ObjectPath(PurePosixPath):
    """``bucket/key`` that prints as ``s3://bucket/key``: rejects, ``source_file`` and the manifest name
    the object, never the temp file it was fetched to."""

    def __str__(self) -> str:
        return "s3://" + super().__str__()


def is_object_url(pattern: str | None) -> bool:
    return bool(pattern) and pattern.startswith("s3://")


def _split(url: str) -> tuple[str, str]:
    rest = url[len("s3://"):].strip("/")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise InputError(f"--input {url}: no bucket; write --input s3://BUCKET/PREFIX/")
    return bucket, prefix


def store_place() -> dict[str, str | None]:
    """Where this process's settings say the store is: its endpoint and region, nothing secret. A
    stage-1 task reaches the driver's store with it and the credentials of its own environment."""
    env = os.environ
    return {"endpoint": env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"),
            "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")}


def open_store(url: str, place: dict[str, str | None] | None = None):  # noqa: ANN201 - pyarrow.fs.S3FileSystem
    """The S3 file system for ``url`` from the standard AWS settings (endpoint and region from ``place``
    when given: a task on the driver's store); an InputError naming what to set when credentials or a
    place to connect to are missing (rather than a minutes-long metadata probe)."""
    from pyarrow import fs  # imported lazily (0.1 s)

    env = os.environ
    place = place or store_place()
    endpoint, region = place["endpoint"], place["region"]
    profile_file = Path(env.get("AWS_SHARED_CREDENTIALS_FILE", Path.home() / ".aws" / "credentials"))
    has_keys = bool(env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"))
    if not (has_keys or env.get("AWS_PROFILE") or profile_file.is_file()):
        raise InputError(f"--input {url}: no S3 credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                         "(or AWS_PROFILE / ~/.aws/credentials)")
    if not (endpoint or region):
        raise InputError(f"--input {url}: no S3 endpoint or region; set AWS_ENDPOINT_URL (any S3-compatible "
                         "store, e.g. http://minio:9000) or AWS_REGION (AWS itself)")
    kwargs: dict = {"region": region} if region else {}
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        kwargs.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    if has_keys:
        kwargs.update(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                      session_token=env.get("AWS_SESSION_TOKEN"))
    return fs.S3FileSystem(**kwargs)


def list_objects(url: str, store, warnings: list[str]) -> list:  # noqa: ANN001
    """Every span object under the prefix (pyarrow FileInfo: path, size, mtime). Objects that are not
    ``traces_``/``logs_`` ``.json``/``.binpb`` (``.gz``) are counted and named in a warning."""
    from pyarrow import fs

    bucket, prefix = _split(url)
    base = f"{bucket}/{prefix}".rstrip("/")
    try:
        infos = store.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True))
    except OSError as exc:
        raise InputError(f"--input {url}: cannot list the bucket ({exc}); check AWS_ENDPOINT_URL, the bucket "
                         "name and the credentials") from None
    if not infos and store.get_file_info(bucket).type == fs.FileType.NotFound:
        raise InputError(f"--input {url}: no bucket {bucket!r} at this endpoint; check the bucket name and "
                         "AWS_ENDPOINT_URL / AWS_REGION")
    files = sorted((i for i in infos if i.type == fs.FileType.File and i.size), key=lambda i: i.path)
    keep = [i for i in files if _OBJECT_NAME.search(i.path.rsplit("/", 1)[-1])]
    other = [i.path for i in files if not _OBJECT_NAME.search(i.path.rsplit("/", 1)[-1])]
    if other:
        warnings.append(f"{len(other)} object(s) under {url} not read (not traces_/logs_ .json or .binpb, "
                        f"optionally .gz, as awss3exporter's otlp_json/otlp_proto write): "
                        + ", ".join(f"s3://{p}" for p in other[:5]) + (" ..." if len(other) > 5 else ""))
    return keep


SKEW_NS = 5_000_000_000  # LastModified has 1 s resolution; 4 s more for clock skew between the store and us


def _version(etag: str, mtime_ns: int, fetched_ns: int) -> str:
    return f"{etag}@{mtime_ns}@{fetched_ns}"


def _unchanged(store, info, rec: dict | None) -> bool:  # noqa: ANN001
    """Same key, size and LastModified, fetched well after that LastModified: no rewrite can hide behind
    LastModified's 1 s resolution, so the listing alone says the object is the one read (no request).
    Otherwise (read within seconds of its write) a HEAD compares ETags."""
    if rec is None or rec["size"] != info.size:
        return False
    parts = rec["fingerprint"].split("@")
    if len(parts) != 3 or parts[1] != str(info.mtime_ns or 0):
        return False
    etag, mtime_ns, fetched_ns = parts[0], int(parts[1]), int(parts[2])
    if fetched_ns >= mtime_ns + SKEW_NS:
        return True
    try:
        with store.open_input_file(info.path) as head:  # a HEAD request, no body
            return _etag(head.metadata()) == etag
    except FileNotFoundError:
        return True  # gone since the listing: nothing new to read


def _etag(meta: dict) -> str:
    return str(meta.get("ETag") or meta.get("etag") or "").strip('"')


@dataclass
class ListedObject(SpanFile):
    """An object the driver listed and did not fetch (``--workers N``): the stage-1 task that stages it
    GETs it first (``fetch_listed``). Until then ``size`` and ``end`` are the listed size (what the work
    is split by) and its format is unknown; the driver records the item the task fetched, not this one."""

    key: str = ""  # bucket/key
    mtime_ns: int = 0  # LastModified, from the listing


def _gone(key: str) -> str:
    return f"s3://{key}: gone before it could be read; not recorded"


def plan_objects(url: str, lake: Path, state: dict[str, dict], warnings: list[str],
                 fetch: bool = True) -> list[SpanFile]:
    """New or rewritten objects, each fetched to a private temp file held open (``SpanFile.fd``) and
    unlinked at once, so ``close_planned`` frees it. Past the open-file budget the rest wait for the
    next run (a warning), as local files do. ``fetch=False`` (``--workers N``): listed only, as
    ``ListedObject``s the tasks fetch; nothing is held open here, so no budget applies."""
    store = open_store(url)
    infos = list_objects(url, store, warnings)
    todo = []
    for info in infos:
        if not _unchanged(store, info, state.get(f"s3://{info.path}")):
            todo.append(info)  # new, or rewritten under the same key
    if not fetch:
        return [_listed(info) for info in todo]
    budget = _open_file_budget(len(todo))
    if len(todo) > budget:
        warnings.append(f"{len(todo) - budget} object(s) left for the next run: no more files can be held open at "
                        "once (raise the open-file limit, ulimit -n)")
        todo = todo[:budget]
    tmp = lake / "_tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    plan = []
    for info in todo:
        try:
            plan.append(_fetch(store, info, tmp / f"object-{uuid.uuid4().hex}"))
        except FileNotFoundError:
            warnings.append(_gone(info.path))
    return plan


def _listed(info) -> ListedObject:  # noqa: ANN001 - a pyarrow FileInfo
    signal = _OBJECT_NAME.search(info.path.rsplit("/", 1)[-1]).group(1)
    return ListedObject(path=ObjectPath(info.path), size=info.size, fingerprint="", fp_len=0, fmt="unfetched",
                        signal=signal, active=False, end=info.size, key=info.path, mtime_ns=info.mtime_ns or 0)


def fetch_listed(store, item: ListedObject, dst: Path, warnings: list[str]) -> SpanFile | None:  # noqa: ANN001
    """In a stage-1 task: the object the driver listed, fetched to ``dst`` exactly as ``plan_objects``
    fetches it (so its recorded size, version and format mean what a one-process run's do); None, with
    the one-process run's warning, when it is gone since the listing."""
    try:
        return _fetch(store, SimpleNamespace(path=item.key, size=item.size, mtime_ns=item.mtime_ns), dst)
    except FileNotFoundError:
        warnings.append(_gone(item.key))
        return None


def _fetch(store, info, dst: Path) -> SpanFile:  # noqa: ANN001
    """GET one object into ``dst`` as the lake reads it: JSON lines, or one length-framed protobuf message."""
    name = info.path.rsplit("/", 1)[-1]
    m = _OBJECT_NAME.search(name)
    signal, ext, gz = m.group(1), m.group(2), bool(m.group(3))
    path = ObjectPath(info.path)
    rejects: list[Reject] = []
    fetched_ns = time.time_ns()  # before the GET: a rewrite after it has a LastModified at least this late
    with store.open_input_stream(info.path, compression=None) as src:
        etag = _etag(src.metadata())
        body = src.read()
    if gz:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as exc:
            rejects.append(Reject(str(path), 0, f"cannot decompress the gzip object: {exc}"))
            body = b""
    fmt = "proto" if ext == "binpb" and body else "json"
    with open(dst, "wb") as out:
        if fmt == "proto":
            out.write(struct.pack(">I", len(body)) + body)
        elif body.strip():
            out.write(body.rstrip(b"\n") + b"\n")
    fd = os.open(dst, os.O_RDONLY)
    dst.unlink()  # the handle keeps it readable; nothing is left behind whatever happens next
    size = os.fstat(fd).st_size
    fp_len = min(size, FINGERPRINT_BYTES)
    item = SpanFile(path=path, size=size, fingerprint=_fingerprint_fd(fd, fp_len), fp_len=fp_len, fmt=fmt,
                    signal=signal, active=False, end=size, rejects=rejects, fd=fd)
    item.record_overrides = {"size": info.size, "fingerprint": _version(etag, info.mtime_ns or 0, fetched_ns),
                             "fp_len": 0,
                             "format": f"s3-{ext}{'-gzip' if gz else ''}"}
    return item
