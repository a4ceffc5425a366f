"""A data root on S3-compatible storage: ``--data s3://BUCKET/PREFIX`` (docs/scale.md).

The stages keep working on a folder: the command runs on a local *mirror* of the root, and the root's
state on the store changes in one step at the end, the way a local root changes by ``os.replace``:

- every file of the root is an immutable, content-addressed object ``objects/<sha256>``;
- a manifest ``manifests/<version>-<token>.json`` names each file of one state of the root
  (relative path -> sha256 and size), written once (``If-None-Match: *``);
- ``ROOT`` names the current manifest and moves by compare-and-swap (``If-Match`` on the ETag read
  before the run): a reader that reads ``ROOT`` then its manifest sees one whole state, old or new,
  never part of one, whatever a writer is doing;
- ``LEASE`` keeps one writer at a time: created only if absent, renewed while the command runs,
  expiring (``SPANRL_LEASE_TTL_S``, default 300 s) so a writer that died on another machine blocks
  no one for longer than that; one that died on this machine (its pid is gone) is taken over at once.

A crash anywhere before the ``ROOT`` swap leaves the old state (plus unreferenced objects); the next
run restores its mirror to that state (files not in the manifest are deleted, changed ones fetched
again) and does the work again, so it ends where an uninterrupted run would have.

Mirrors live under ``$SPANRL_CACHE`` (default ``~/.cache/spanrl``) at ``roots/<write|read>/ENDPOINT/
BUCKET/PREFIX``: the same path every run on one machine, so what the lake records about its input
files stays valid between runs, and a run fetches only the objects it does not have. The endpoint is
part of the path and a reader's folder is named after the manifest (version and the writer's token),
never the version number alone: the same bucket name on another endpoint, or a bucket recreated, is
another root whose version 1 is not this one's. Every fetched object is hashed against its name, and a
writer checks what its next state names before publishing it (spanrl/integrity.py); a fetched file
gets the mtime the writer's file had, so stage 2's record of the lake files holds on a fresh mirror.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from spanrl.errors import InputError
from spanrl.integrity import VERIFIED, ensure_named, fetch_object, sha256_file
from spanrl.lease import Lease, acquire_lease
from spanrl.publish import TMP_PREFIX, TRASH_PREFIX, exclusive, fsync_path
from spanrl.rootstate import MANIFESTS, OBJECTS, ROOT, RootState, manifest_body, missing_root, read_state
from spanrl.storage import Conflict, ObjectStore, remote_url

__all__ = ["OBJECTS", "ROOT", "RootState", "read_state", "remote_root"]  # tests and tools read a root through here

MIRROR_STATE = "mirror.json"  # next to the mirror's root folder, never inside it (so never uploaded)

# What a run leaves behind that is not part of the root's state: lock files (``*.lock``), drafts being
# written or deleted (spanrl.publish's prefixes), stage 1's work folders. A local root ignores them too.
TRANSIENT_DIRS = ("_tmp", "_staging")

# The writer mirrors this process has open: resolved mirror root -> (root URL, mirror base). Stage 2's
# shard tasks on an S3 root fetch from the store and upload to it (spanrl/remote_tasks.py), not this folder.
WRITING: dict[str, tuple[str, Path]] = {}


def cache_root() -> Path:
    return Path(os.environ.get("SPANRL_CACHE") or Path.home() / ".cache" / "spanrl")


def mirror_base(store: ObjectStore, write: bool, kind: str | None = None) -> Path:
    """Where this machine keeps the mirror of ``store``'s root (its ``root`` folder and ``mirror.json``):
    one per endpoint, bucket and prefix (``kind``: another sort of copy, e.g. ``inplace``)."""
    endpoint = re.sub(r"[^A-Za-z0-9.-]+", "_", store.endpoint.split("://", 1)[-1]).strip("_") or "_"
    folder = kind or ("write" if write else "read")
    return cache_root() / "roots" / folder / endpoint / store.bucket / (store.prefix or "_")


def _transient(name: str) -> bool:
    return name.endswith(".lock") or name.startswith((TMP_PREFIX, TRASH_PREFIX))


def walk(root: Path) -> dict[str, Path]:
    """Every file of the root's state, by path relative to ``root`` (POSIX separators)."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in TRANSIENT_DIRS and not _transient(d)]
        for name in filenames:
            if not _transient(name):
                path = Path(dirpath) / name
                found[path.relative_to(root).as_posix()] = path
    return found


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def pull(store: ObjectStore, base: Path, state: RootState) -> tuple[Path, dict[str, str]]:
    """Make ``base/root`` hold exactly ``state``'s files: keep those unchanged since the last pull or
    push recorded them (the record is the hash check of a file already here: it was hashed when fetched
    or published, and a rewrite changes its mtime), fetch and hash the others, delete what the state does
    not name. Returns ``base/root`` and {sha256: ETag} of the objects fetched."""
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    record = read_json(base / MIRROR_STATE)
    have = walk(root)
    by_sha: dict[str, Path] = {}
    for rel, path in have.items():
        if rel not in state.files:
            path.unlink()
        elif record.get(rel) == [state.files[rel][0], *_stamp(path)]:
            by_sha[state.files[rel][0]] = path
    for dirpath, dirnames, _ in os.walk(root, topdown=False):  # folders emptied above (or by a crash)
        for d in dirnames:
            p = Path(dirpath) / d
            if not any(p.iterdir()):
                p.rmdir()
    users: dict[str, list[str]] = {}
    for rel, (sha, _) in sorted(state.files.items()):
        users.setdefault(sha, []).append(rel)
    fresh: dict[str, list[Any]] = {}
    fetched: dict[str, str] = {}
    for rel, (sha, size) in sorted(state.files.items()):
        path = root / rel
        mtime = state.mtimes.get(rel)
        if by_sha.get(sha) == path and mtime in (None, path.stat().st_mtime_ns):
            fresh[rel] = [sha, *_stamp(path)]
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
        if sha in by_sha:  # the same bytes under another name: a copy, never a link (files are rewritten in place)
            shutil.copyfile(by_sha[sha], part)
        else:
            fetched[sha] = fetch_object(store, sha, size, users[sha], part, state.manifest or ROOT)
        if mtime is not None:  # the writer's: stage 2 recorded the lake files by size and mtime
            os.utime(part, ns=(mtime, mtime))
        os.replace(part, path)
        by_sha.setdefault(sha, path)
        fresh[rel] = [sha, *_stamp(path)]
    write_json(base / MIRROR_STATE, fresh)
    return root, fetched


def push(store: ObjectStore, base: Path, state: RootState, lease: Lease, command: str,
         fetched: dict[str, str]) -> int | None:
    """Publish ``base/root`` as the root's next state: upload the objects the store lacks, check that every
    object the state names holds its bytes (``integrity.ensure_named``), write the manifest, swap ``ROOT``.
    Returns the new version (None: nothing changed, nothing written; the objects are checked all the same,
    so any writer run puts back what it holds). ``fetched``: {sha256: ETag} the pull hashed."""
    root = base / "root"
    record = read_json(base / MIRROR_STATE)
    files: dict[str, list[Any]] = {}
    stamps: dict[str, list[Any]] = {}
    local: dict[str, Path] = {}
    by_inode: dict[tuple[int, int, int], str] = {}
    for rel, path in sorted(walk(root).items()):
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns]
        old = record.get(rel)
        if old is not None and old[1:] == stamp:
            sha = old[0]
        else:
            inode = (st.st_dev, st.st_ino, st.st_mtime_ns)
            sha = by_inode.get(inode) or sha256_file(path)
            by_inode[inode] = sha
        files[rel] = [sha, st.st_size]
        stamps[rel] = [sha, *stamp]
        local.setdefault(sha, path)
    changed = files != state.files
    uploaded: set[str] = set()
    if changed:
        known = {sha for sha, _ in state.files.values()}
        for rel, (sha, _) in files.items():
            if sha in known or sha in uploaded:
                continue
            if not store.exists(f"{OBJECTS}/{sha}"):  # else checked below like any object this run did not write
                store.upload(f"{OBJECTS}/{sha}", root / rel)
                uploaded.add(sha)
                if os.environ.get("SPANRL_TEST_CRASH_AT") == "remote_upload":  # tests: die after one upload
                    os._exit(137)
            known.add(sha)
    verified = {**read_json(base / VERIFIED), **fetched}
    named_by = "the manifest this run publishes" if changed else (state.manifest or ROOT)
    etags = ensure_named(store, files, local, uploaded, verified, named_by, lambda line: click.echo(line, err=True))
    write_json(base / VERIFIED, etags)
    if not changed:
        write_json(base / MIRROR_STATE, stamps)
        return None
    version = state.version + 1
    name = f"{MANIFESTS}/{version:08d}-{lease.body['token']}.json"
    mtimes = {rel: stamp[2] for rel, stamp in stamps.items()}
    store.put(name, manifest_body(version, command, files, mtimes, state.manifest, etags), if_none_match=True)
    if os.environ.get("SPANRL_TEST_CRASH_AT") == "remote_publish":  # tests: die between manifest and swap
        os._exit(137)
    lease.check()
    pointer = json.dumps({"version": version, "manifest": name}).encode()
    try:
        if state.etag is None:
            store.put(ROOT, pointer, if_none_match=True)
        else:
            store.put(ROOT, pointer, if_match=state.etag)
    except Conflict:
        raise InputError(f"{store.url}: ROOT changed while this run held the lease (another writer ignored it?); "
                         "nothing was published by this run. Re-run the command.") from None
    write_json(base / MIRROR_STATE, stamps)
    return version


def read_json(path: Path) -> dict[str, Any]:
    """A mirror's own record, or {} when it is missing or torn (the next run re-checks what it covered)."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
    fsync_path(path.parent)


@contextmanager
def remote_root(url: str, write: bool, command: str, may_start: bool = True) -> Iterator[Path]:
    """Run a command's body on the local mirror of the root ``url``; a writer publishes what the body
    left in the mirror when (and only when) it returns normally. A root with no ``ROOT`` yet is refused
    (exit 2) unless ``may_start``, and always for a reader: a typo in the prefix must not read as an
    empty root."""
    url = remote_url(url)
    store = ObjectStore(url)
    base = mirror_base(store, write)
    base.mkdir(parents=True, exist_ok=True)
    if not write:
        with read_mirror(store, base) as root:
            yield root
        return
    busy = (f"another spanrl command on this machine is writing the mirror of {url} ({base}); "
            "wait for it to finish")
    if not may_start and store.get(ROOT) is None:  # before the lease: nothing written under a typo
        raise missing_root(url)
    lease = acquire_lease(store, command)  # first: a refusal names the writer
    try:
        with exclusive(base / ".mirror.lock", busy):
            state = read_state(store)
            if state.etag is None and not may_start:
                raise missing_root(url)
            root, fetched = pull(store, base, state)
            WRITING[str(root.resolve())] = (url, base)
            try:
                yield root
            finally:
                WRITING.pop(str(root.resolve()), None)
            version = push(store, base, state, lease, command, fetched)
            if version is not None:
                click.echo(f"published {url} (version {version})", err=True)
    finally:
        lease.release()


@contextmanager
def read_mirror(store: ObjectStore, base: Path, state: RootState | None = None,
                select: Callable[[str], bool] | None = None,
                after: Callable[[Path, RootState], None] | None = None) -> Iterator[Path]:
    """A reader's mirror: one folder per published state (``v<version>-<token>/``, the manifest's unique
    name), filled once (from the newest older one, hard-linked, plus the objects that changed) and shared
    by every reader of that state, each holding a shared lock on it while it runs (``spanrl ui`` for
    hours, ``spanrl sql`` beside it). States no reader holds are removed, the newest excepted.
    A reader in place (spanrl/inplace.py) fetches only the files ``select`` names, and ``after(root, state)``
    stands in for the others once they are fetched."""
    state = state or read_state(store)
    if state.etag is None:
        raise missing_root(store.url)
    folder = base / f"v{state.name}"
    held = open(base / f".in-use-{folder.name}", "w")  # noqa: SIM115 - held for the whole command
    with open(base / ".pull.lock", "w") as pull_lock:
        fcntl.flock(pull_lock, fcntl.LOCK_EX)  # readers of one machine fill and drop versions one at a time
        try:
            if not (folder / ".complete").exists():
                shutil.rmtree(folder, ignore_errors=True)  # a reader killed while filling it
                older = sorted(p for p in base.glob("v*") if (p / ".complete").exists())
                if older:
                    _link_tree(older[-1], folder)
                files = {rel: v for rel, v in state.files.items() if select is None or select(rel)}
                pull(store, folder, replace(state, files=files))
                if after is not None:
                    after(folder / "root", state)
                (folder / ".complete").touch()
            fcntl.flock(held, fcntl.LOCK_SH)
            _drop_unused_versions(base, keep=folder)
        finally:
            fcntl.flock(pull_lock, fcntl.LOCK_UN)
    try:
        yield folder / "root"
    finally:
        held.close()


def _link_tree(src: Path, dst: Path) -> None:
    """``dst`` as a copy of the mirror folder ``src`` whose files are hard links (readers never write
    a mirror's files in place)."""
    shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns(".complete"))


def _drop_unused_versions(base: Path, keep: Path) -> None:
    for folder in base.glob("v*"):
        if folder == keep or not folder.is_dir():
            continue
        with open(base / f".in-use-{folder.name}", "w") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a reader still runs on it
            shutil.rmtree(folder, ignore_errors=True)
        (base / f".in-use-{folder.name}").unlink(missing_ok=True)
