"""Ray tasks that share nothing with the driver but the store (``--workers N --data s3://...``, docs/scale.md).

On a data root on object storage the driver runs on its writer mirror (spanrl/remote.py), a folder no
worker on another node can see. So a stage-2 shard task gets keys, not paths: the driver names every
file the task reads by its object (``share``: relative path -> sha256 and size, the way a manifest names
files; a file this run made, such as tonight's lake files, is uploaded first: the publish would upload it
anyway and then finds it there). The task fetches those objects into a temp folder of its own, hashed
against their names (``fetch_files``), computes there, and uploads what it wrote as objects
(``upload_folder``); the driver fetches them into its draft by key (``take``), since the state it
publishes is its mirror. Objects uploaded by a run that then fails are named by no manifest:
``spanrl lake gc`` deletes them.

A task reaches the store with the driver's endpoint and the credentials of its own environment (the
standard ``AWS_*`` variables or the node's role); nothing secret travels in a task's arguments.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spanrl.integrity import VERIFIED, fetch_object, sha256_file
from spanrl.remote import MIRROR_STATE, WRITING, read_json, write_json
from spanrl.rootstate import object_key
from spanrl.storage import ObjectStore

Files = dict[str, list[Any]]  # relative path -> [sha256, size]


def writer_store(data: Path | str) -> dict[str, str] | None:
    """What a task needs to reach the S3 root whose writer mirror is ``data`` (its URL and the driver's
    endpoint), or None for a local root (tasks then read the driver's paths: a shared disk)."""
    found = WRITING.get(str(Path(data).resolve()))
    if found is None:
        return None
    return {"url": found[0], "endpoint": ObjectStore(found[0]).endpoint}


def share(data: Path | str, rels: Iterable[str]) -> Files:
    """Driver: {rel: [sha256, size]} of these files of the writer mirror ``data``, each an object on the
    store (uploaded now when the store lacks it), noted in the mirror's record of checked objects."""
    url, base = WRITING[str(Path(data).resolve())]
    store = ObjectStore(url)
    root = base / "root"
    record = read_json(base / MIRROR_STATE)
    out: Files = {}
    for rel in sorted(set(rels)):
        st = (root / rel).stat()
        old = record.get(rel)
        sha = old[0] if old is not None and old[1:] == [st.st_size, st.st_mtime_ns] else sha256_file(root / rel)
        out[rel] = [sha, st.st_size]
    listed = store.listing(object_key(""))
    uploaded = set()
    for rel, (sha, size) in out.items():
        if listed.get(object_key(sha), (None, None))[1] != size and sha not in uploaded:
            store.upload(object_key(sha), root / rel)  # one with the right size is checked by the publish
            uploaded.add(sha)
    if uploaded:  # a HEAD each for what this build uploaded (tonight's files), not a second listing
        verified = read_json(base / VERIFIED)
        verified.update({sha: store.etag(object_key(sha)) for sha in sorted(uploaded)})
        write_json(base / VERIFIED, verified)
    return out


def take(data: Path | str, objects: Files, folder: Path) -> None:
    """Driver: the objects a task uploaded, fetched (hashed against their names) into ``folder`` of the
    writer mirror ``data`` as the files they name, and noted as checked for the publish."""
    url, base = WRITING[str(Path(data).resolve())]
    store = ObjectStore(url)
    folder.mkdir(parents=True, exist_ok=True)
    etags = {sha: fetch_object(store, sha, size, [name], folder / name, "a worker's upload")
             for name, (sha, size) in sorted(objects.items())}
    write_json(base / VERIFIED, {**read_json(base / VERIFIED), **etags})


def fetch_files(store: dict[str, str], files: Files, root: Path) -> None:
    """Task: each of ``files`` fetched from the store to ``root/<rel>``, hashed against its name."""
    objects = ObjectStore(store["url"], endpoint=store["endpoint"])
    for rel, (sha, size) in sorted(files.items()):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        fetch_object(objects, sha, size, [rel], root / rel, "the driver's task")


def upload_folder(store: dict[str, str], folder: Path) -> Files:
    """Task: every file of ``folder`` as an object on the store; {name: [sha256, size]}."""
    objects = ObjectStore(store["url"], endpoint=store["endpoint"])
    out: Files = {}
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        sha = sha256_file(path)
        if not objects.exists(object_key(sha)):
            objects.upload(object_key(sha), path)
        out[path.name] = [sha, path.stat().st_size]
    return out


def task_folder() -> Path:
    """Task: a temp folder of its own (the worker's ``TMPDIR``), never the driver's root or cache."""
    return Path(tempfile.mkdtemp(prefix="spanrl-task-"))


def drop(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


_FORBIDDEN: list[str] = []


def forbid_root_for_tests(driver_pid: int) -> None:
    """Tests only: with ``SPANRL_TEST_FORBID_ROOT=<folder>``, a task process (not the driver) raises
    when Python opens or lists a path under that folder (the driver's mirror), so a test proves the
    tasks read nothing there. DuckDB's own reads do not pass here; the task's connection is locked to
    its temp folder (``lock_down``) instead."""
    forbidden = os.environ.get("SPANRL_TEST_FORBID_ROOT")
    if not forbidden or os.getpid() == driver_pid or _FORBIDDEN:
        return
    _FORBIDDEN.extend({os.path.abspath(forbidden), os.path.realpath(forbidden)})

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        if not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.path.abspath(os.fsdecode(args[0]))
        if any(path == f or path.startswith(f + os.sep) for f in _FORBIDDEN):
            raise PermissionError(f"SPANRL_TEST_FORBID_ROOT: a task opened {path}, under the driver's root")

    sys.addaudithook(hook)
