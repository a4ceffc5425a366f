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

Mirrors live under ``$SPANRL_CACHE`` (default ``~/.cache/spanrl``) at ``roots/<write|read>/BUCKET/
PREFIX/root``: the same path every run on one machine, so what the lake records about its input
files stays valid between runs, and a run fetches only the objects it does not have.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.lease import Lease, acquire_lease
from spanrl.publish import TMP_PREFIX, TRASH_PREFIX, exclusive, fsync_path
from spanrl.storage import Conflict, ObjectStore, remote_url, split_url

ROOT = "ROOT"
OBJECTS = "objects"
MANIFESTS = "manifests"
MIRROR_STATE = "mirror.json"  # next to the mirror's root folder, never inside it (so never uploaded)

# What a run leaves behind that is not part of the root's state: lock files (``*.lock``), drafts being
# written or deleted (spanrl.publish's prefixes), stage 1's work folders. A local root ignores them too.
TRANSIENT_DIRS = ("_tmp", "_staging")


def cache_root() -> Path:
    return Path(os.environ.get("SPANRL_CACHE") or Path.home() / ".cache" / "spanrl")


def mirror_base(url: str, write: bool) -> Path:
    """Where this machine keeps the mirror of ``url`` (its ``root`` folder and ``mirror.json``)."""
    bucket, prefix = split_url(url)
    return cache_root() / "roots" / ("write" if write else "read") / bucket / (prefix or "_")


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


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


@dataclass
class RootState:
    """The root's state as ``ROOT`` named it when the run started."""

    files: dict[str, list[Any]]  # relative path -> [sha256, size]
    version: int
    etag: str | None  # ROOT's ETag (None: no state yet)


def read_state(store: ObjectStore) -> RootState:
    pointer = store.get(ROOT)
    if pointer is None:
        return RootState({}, 0, None)
    ref = json.loads(pointer.body)
    manifest = store.get(ref["manifest"])
    if manifest is None:
        raise InputError(f"{store.url}: ROOT names {ref['manifest']}, which is missing; the root is damaged "
                         "(restore that object from versioning/backup)")
    return RootState(json.loads(manifest.body)["files"], int(ref["version"]), pointer.etag)


def pull(store: ObjectStore, base: Path, state: RootState) -> Path:
    """Make ``base/root`` hold exactly ``state``'s files: keep those unchanged since the last pull or
    push recorded them, fetch the others, delete what the state does not name. Returns ``base/root``."""
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    record_path = base / MIRROR_STATE
    record: dict[str, list[Any]] = json.loads(record_path.read_text()) if record_path.is_file() else {}
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
    fresh: dict[str, list[Any]] = {}
    for rel, (sha, size) in sorted(state.files.items()):
        path = root / rel
        if by_sha.get(sha) == path:
            fresh[rel] = [sha, *_stamp(path)]
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
        if sha in by_sha:  # the same bytes under another name: a copy, never a link (files are rewritten in place)
            shutil.copyfile(by_sha[sha], part)
        else:
            store.download(f"{OBJECTS}/{sha}", part)
        if part.stat().st_size != size:
            part.unlink()
            raise InputError(f"{store.url}: object {OBJECTS}/{sha} for {rel} has the wrong size; the root is damaged")
        os.replace(part, path)
        by_sha.setdefault(sha, path)
        fresh[rel] = [sha, *_stamp(path)]
    _write_json(record_path, fresh)
    return root


def push(store: ObjectStore, base: Path, state: RootState, lease: Lease, command: str) -> int | None:
    """Publish ``base/root`` as the root's next state: upload the objects the store lacks, write the
    manifest, swap ``ROOT``. Returns the new version (None: nothing changed, nothing written)."""
    root = base / "root"
    record_path = base / MIRROR_STATE
    record: dict[str, list[Any]] = json.loads(record_path.read_text()) if record_path.is_file() else {}
    files: dict[str, list[Any]] = {}
    stamps: dict[str, list[Any]] = {}
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
    if files == state.files:
        _write_json(record_path, stamps)
        return None
    known = {sha for sha, _ in state.files.values()}
    uploaded: set[str] = set()
    for rel, (sha, _) in files.items():
        if sha in known or sha in uploaded:
            continue
        if not store.exists(f"{OBJECTS}/{sha}"):
            store.upload(f"{OBJECTS}/{sha}", root / rel)
        uploaded.add(sha)
    version = state.version + 1
    name = f"{MANIFESTS}/{version:08d}-{lease.body['token']}.json"
    store.put(name, json.dumps({"version": version, "created_at": time.time(), "command": command,
                                "files": files}, sort_keys=True).encode(), if_none_match=True)
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
    _write_json(record_path, stamps)
    return version


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
    fsync_path(path.parent)


@contextmanager
def remote_root(url: str, write: bool, command: str) -> Iterator[Path]:
    """Run a command's body on the local mirror of the root ``url``; a writer publishes what the body
    left in the mirror when (and only when) it returns normally."""
    url = remote_url(url)
    store = ObjectStore(url)
    base = mirror_base(url, write)
    base.mkdir(parents=True, exist_ok=True)
    if not write:
        with read_mirror(store, base) as root:
            yield root
        return
    busy = (f"another spanrl command on this machine is writing the mirror of {url} ({base}); "
            "wait for it to finish")
    lease = acquire_lease(store, command)  # first: a refusal names the writer
    try:
        with exclusive(base / ".mirror.lock", busy):
            state = read_state(store)
            root = pull(store, base, state)
            yield root
            version = push(store, base, state, lease, command)
            if version is not None:
                import click

                click.echo(f"published {url} (version {version})", err=True)
    finally:
        lease.release()


@contextmanager
def read_mirror(store: ObjectStore, base: Path) -> Iterator[Path]:
    """A reader's mirror: one folder per state version (``v<version>/``), filled once (from the newest
    older one, hard-linked, plus the objects that changed) and shared by every reader of that version,
    each holding a shared lock on it while it runs (``spanrl ui`` for hours, ``spanrl sql`` beside it).
    Versions no reader holds are removed, the newest excepted."""
    state = read_state(store)
    folder = base / f"v{state.version:08d}"
    held = open(base / f".in-use-{folder.name}", "w")  # noqa: SIM115 - held for the whole command
    with open(base / ".pull.lock", "w") as pull_lock:
        fcntl.flock(pull_lock, fcntl.LOCK_EX)  # readers of one machine fill and drop versions one at a time
        try:
            if not (folder / ".complete").exists():
                shutil.rmtree(folder, ignore_errors=True)  # a reader killed while filling it
                older = sorted(p for p in base.glob("v*") if (p / ".complete").exists())
                if older:
                    _link_tree(older[-1], folder)
                pull(store, folder, state)
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


# Which commands may take ``--data s3://...``: writers hold the lease and publish; readers work on a
# read-only mirror of the current state. Any other command refuses such a root by name.
WRITERS = frozenset({"ingest", "transitions build", "transitions clean", "lake compact", "lake prune", "train",
                     "adapters promote", "adapters clean", "judge"})
READERS = frozenset({"sql", "export", "ui", "tasks", "adapters list", "report"})


def remote_aware(command: Any, path: str) -> Any:
    """``command`` (a click command or group, named ``path`` under ``spanrl``) such that a ``--data``
    (or ``$SPANRL_DATA``) on object storage runs it on the root's local mirror (``remote_root``)."""
    import click

    if isinstance(command, click.Group):
        for name, sub in list(command.commands.items()):
            command.commands[name] = remote_aware(sub, f"{path} {name}")
        return command
    if getattr(command, "_spanrl_remote", False):
        return command
    original = command.invoke

    def invoke(ctx: click.Context) -> Any:
        from spanrl.storage import is_remote

        data = ctx.params.get("data")
        if not is_remote(data):
            return original(ctx)
        if path not in WRITERS and path not in READERS:
            raise InputError(f"`spanrl {path}` cannot use a data root on object storage ({remote_url(data)}); "
                             f"these can: {', '.join(sorted(WRITERS | READERS))}. Give it a local --data.")
        with remote_root(str(data), write=path in WRITERS, command=f"spanrl {path}") as local:
            ctx.params["data"] = local
            before = os.environ.get("SPANRL_DATA")
            os.environ["SPANRL_DATA"] = str(local)  # for code that resolves the root itself
            try:
                return original(ctx)
            finally:
                if before is None:
                    os.environ.pop("SPANRL_DATA", None)
                else:
                    os.environ["SPANRL_DATA"] = before

    command.invoke = invoke
    command._spanrl_remote = True
    return command
