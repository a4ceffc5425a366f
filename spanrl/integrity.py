"""Objects of a data root on object storage hold the bytes their names promise, or spanrl says which do not.

Every file of an S3 root is ``objects/<sha256 of its bytes>``, written once. Anything else that writes
the bucket (a script, a sync tool, a hand edit, a restore of the wrong version) can break that promise,
and before this module nothing checked it: a reader failed deep in a Parquet decoder without the object's
name, or answered from Parquet metadata alone (``count(*)``) as if nothing were wrong, and a writer whose
mirror still held the right bytes published the next version naming the damaged object. So:

- a reader hashes every object it fetches, as it fetches it (``fetch_object``); a file its mirror
  already holds was hashed when it was fetched or published, and the mirror's record keeps that
  check keyed by sha256, size and mtime (``spanrl.remote.pull``): re-hashing a whole mirror on every
  ``spanrl sql`` would cost a full read of the root, and a change through the file system changes the
  mtime, so the record is the cheap check that still sees every rewrite;
- a writer checks every object its next state names before any manifest names it (``ensure_named``):
  one listing gives each object's ETag; an object this machine uploaded in this run, or whose bytes it
  hashed at that same ETag (``objects.json`` in its mirror), is as it was; any other is fetched and
  hashed. One whose bytes do not match is put back from the writer's own copy when that copy hashes
  right (it is the content its name promises), else the run stops, exit 2, before publishing;
- ``spanrl lake verify`` hashes every object the current state names (``verify_root``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.rootstate import MANIFESTS, object_key, read_state
from spanrl.storage import Fetched, ObjectStore

VERIFIED = "objects.json"  # a writer mirror's record: sha256 -> the ETag of the object version it hashed
FETCH_THREADS = 8  # ``lake verify``'s concurrent GETs: the store's latency, not the CPU, is the limit


def damaged(store: ObjectStore, sha: str, rels: list[str], what: str, named_by: str) -> InputError:
    """The damaged object, where the root uses it, and the ways back."""
    shown = ", ".join(rels[:3]) + (f" and {len(rels) - 3} more" if len(rels) > 3 else "")
    return InputError(
        f"{store.url}/{object_key(sha)} ({shown}, named by {named_by}) {what}: objects are written once under the "
        "sha256 of their bytes, so it was damaged or overwritten on the store. Nothing was read from it and "
        "nothing was published. To go on, put its bytes back: restore that object from the bucket's versioning "
        "or a backup, or run a writer command (e.g. `spanrl ingest`) on a machine whose writer mirror still holds "
        f"{rels[0]} unchanged (a writer puts back the objects it holds before it publishes). "
        f"`spanrl lake verify --data {store.url}` lists every damaged object of the root.")


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def mismatch(got: Fetched | None, sha: str, size: int) -> str | None:
    """How a fetched object differs from the sha256 and size its manifest gives, or None when it does not."""
    if got is None:
        return "is missing"
    if got.size != size:
        return f"holds {got.size:,} bytes where the manifest says {size:,}"
    if got.sha256 != sha:
        return f"holds bytes whose sha256 is {got.sha256}"
    return None


def fetch_object(store: ObjectStore, sha: str, size: int, rels: list[str], dest: Path, named_by: str) -> str:
    """Fetch ``objects/<sha>`` to ``dest``, hashed as it comes; returns its ETag. An InputError naming the
    object (and ``dest`` removed) when its bytes are not the ones its name promises."""
    got = store.fetch(object_key(sha), dest)
    what = mismatch(got, sha, size)
    if what is not None or got is None:
        dest.unlink(missing_ok=True)
        raise damaged(store, sha, rels, what or "is missing", named_by)
    return got.etag


def ensure_named(store: ObjectStore, files: dict[str, list[Any]], local: dict[str, Path], uploaded: set[str],
                 verified: dict[str, str], named_by: str, say: Callable[[str], None]) -> dict[str, str]:
    """Check that every object ``files`` names holds its bytes on the store, putting back from ``local``
    (this writer's copies, by sha256) the ones that do not; returns {sha256: ETag} of those objects, the
    next ``verified`` record. An InputError naming the object when neither the store nor this machine has
    the right bytes."""
    listed = store.listing(object_key(""))
    rels: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for rel, (sha, size) in sorted(files.items()):
        rels.setdefault(sha, []).append(rel)
        sizes[sha] = size
    out: dict[str, str] = {}
    for sha in sorted(rels):
        etag, size = listed.get(object_key(sha), (None, None))
        if etag is not None and size == sizes[sha] and (sha in uploaded or verified.get(sha) == etag):
            out[sha] = etag
            continue
        got = store.fetch(object_key(sha)) if etag is not None else None
        what = mismatch(got, sha, sizes[sha])
        if what is None and got is not None:
            out[sha] = got.etag
        else:
            out[sha] = _put_back(store, sha, rels[sha], local.get(sha), what or "is missing", named_by, say)
    return out


def _put_back(store: ObjectStore, sha: str, rels: list[str], path: Path | None, what: str, named_by: str,
              say: Callable[[str], None]) -> str:
    """Upload this machine's copy of ``objects/<sha>`` over the damaged one, once it hashes to ``sha``."""
    if path is None or not path.is_file() or sha256_file(path) != sha:
        raise damaged(store, sha, rels, what, named_by)
    store.upload(object_key(sha), path)
    say(f"{store.url}/{object_key(sha)} ({rels[0]}) {what}; put its bytes back from {path}")
    return store.listing(object_key(sha))[object_key(sha)][0]


@dataclass
class Verification:
    """What ``spanrl lake verify`` found: the state checked and its damaged objects (sha256, paths, how)."""

    url: str
    version: int
    manifest: str
    objects: int = 0
    files: int = 0
    bytes: int = 0
    damaged: list[tuple[str, list[str], str]] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.url}: all {self.objects:,} object(s) of version {self.version} ({self.manifest}) hold the "
                f"bytes their names promise ({self.files:,} file(s), {self.bytes / 1e6:,.1f} MB hashed)")


def verify_root(url: str, threads: int = FETCH_THREADS) -> Verification:
    """Fetch and hash every object the root's current state names (no mirror, no lease: it only reads)."""
    from spanrl.rootstate import missing_root

    store = ObjectStore(url)
    state = read_state(store)
    if state.etag is None or state.manifest is None:
        raise missing_root(store.url)
    rels: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for rel, (sha, size) in sorted(state.files.items()):
        rels.setdefault(sha, []).append(rel)
        sizes[sha] = size
    report = Verification(store.url, state.version, state.manifest, len(rels), len(state.files), sum(sizes.values()))
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        fetched = dict(zip(rels, pool.map(lambda sha: store.fetch(object_key(sha)), rels), strict=True))
    for sha, got in fetched.items():
        what = mismatch(got, sha, sizes[sha])
        if what is not None:
            report.damaged.append((sha, rels[sha], what))
    return report


def damaged_report(report: Verification) -> InputError:
    lines = [f"{report.url}: {len(report.damaged)} of {report.objects:,} object(s) named by {report.manifest} "
             "do not hold the bytes their names promise:"]
    for sha, rels, what in report.damaged:
        more = f" and {len(rels) - 1} more" if len(rels) > 1 else ""
        lines.append(f"  {object_key(sha)} ({rels[0]}{more}) {what}")
    lines.append("Put their bytes back: restore them from the bucket's versioning or a backup, or run a writer "
                 "command (e.g. `spanrl ingest`) on a machine whose writer mirror still holds those files (a writer "
                 f"puts back the objects it holds before it publishes); then run `spanrl lake verify` again. "
                 f"Older states under {MANIFESTS}/ are not checked.")
    return InputError("\n".join(lines))
