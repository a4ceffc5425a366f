"""One state of a data root on object storage, read whole: ``ROOT`` -> a manifest -> the files' objects.

``ROOT`` and the manifests are the only mutable-looking things a reader trusts before it fetches any
bytes, so they are checked here before anything uses them: a ``ROOT`` or manifest that something other
than spanrl wrote (``hello``, ``[]``, a path outside the root) is named with the way back (exit 2), not
a traceback deep in the mirror code, and never a file written outside the mirror.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from spanrl.errors import InputError
from spanrl.storage import ObjectStore

ROOT = "ROOT"
OBJECTS = "objects"
MANIFESTS = "manifests"

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MANIFEST = re.compile(rf"{MANIFESTS}/(\d{{8}}-[0-9A-Za-z]+)\.json")


@dataclass
class RootState:
    """The root's state as ``ROOT`` named it when the run started."""

    files: dict[str, list[Any]]  # relative path -> [sha256, size]
    version: int
    etag: str | None  # ROOT's ETag (None: no state yet)
    manifest: str | None = None  # manifests/<version>-<token>.json (None: no state yet)
    mtimes: dict[str, int] = field(default_factory=dict)  # relative path -> the writer's mtime_ns
    etags: dict[str, str] = field(default_factory=dict)  # sha256 -> the ETag of the object version the writer checked

    @property
    def name(self) -> str:
        """``<version>-<token>``: unique to this publish (the token is the writer's lease), where the version
        number alone repeats on a recreated bucket or another endpoint."""
        if self.manifest is None:
            return f"{self.version:08d}-none"
        match = _MANIFEST.fullmatch(self.manifest)
        return match.group(1) if match else f"{self.version:08d}-none"


def object_key(sha: str) -> str:
    return f"{OBJECTS}/{sha}"


def manifest_body(version: int, command: str, files: dict[str, list[Any]], mtimes: dict[str, int],
                  parent: str | None = None, etags: dict[str, str] | None = None) -> bytes:
    """A manifest: each file's sha256 and size, and its mtime on the writer (a fresh mirror gives its files
    the same mtimes, so what stage 2 recorded about the lake files stays true there); ``parent``, the
    manifest of the state it replaces (None: the first state), so ``spanrl lake gc`` tells the published
    chain from a crashed run's manifest of the same version; ``etags``, {sha256: ETag} of the object versions
    the writer checked, so a reader in place (spanrl/inplace.py) sees an overwritten object from one listing.
    Each is a key of its own: a manifest without it (an older writer) is read as before."""
    return json.dumps({"version": version, "created_at": time.time(), "command": command, "files": files,
                       "mtimes": mtimes, "parent": parent, "etags": etags or {}}, sort_keys=True).encode()


def missing_root(url: str) -> InputError:
    return InputError(f"{url}: no spanrl data root there (no {ROOT} object under that prefix); check the bucket "
                      f"and prefix in --data (or $SPANRL_DATA). `spanrl ingest --data {url} --input ...` starts one.")


def read_state(store: ObjectStore) -> RootState:
    """The state ``ROOT`` names now (an empty one, version 0, when there is no ``ROOT``)."""
    pointer = store.get(ROOT)
    if pointer is None:
        return RootState({}, 0, None)
    version, name = _pointer(store, pointer.body)
    manifest = store.get(name)
    if manifest is None:
        raise InputError(f"{store.url}: {ROOT} names {name}, which is missing; the root is damaged. Restore that "
                         f"object from the bucket's versioning or a backup; {_newest_hint(store)}")
    doc = parse_manifest(store, name, manifest.body)
    return RootState(doc["files"], version, pointer.etag, name, doc["mtimes"], doc["etags"])


def _pointer(store: ObjectStore, body: bytes) -> tuple[int, str]:
    try:
        ref = json.loads(body)
        version, name = ref["version"], ref["manifest"]
        if not isinstance(version, int) or isinstance(version, bool) or not _MANIFEST.fullmatch(name):
            raise ValueError(name)
    except (ValueError, KeyError, TypeError):
        raise InputError(
            f"{store.url}/{ROOT} is not a spanrl root pointer (it holds {_shown(body)}); spanrl writes only "
            f'{{"version": N, "manifest": "{MANIFESTS}/..."}} there, so something else overwrote it. Nothing was '
            f"read or written. Restore {ROOT} from the bucket's versioning or a backup; {_newest_hint(store)}") from None
    return version, name


def parse_manifest(store: ObjectStore, name: str, body: bytes) -> dict[str, Any]:
    """A manifest's ``files``, ``mtimes``, ``etags`` (empty when an older writer left them out), ``parent``
    (absent: an older writer that did not record it), ``version`` and ``created_at``, checked."""
    try:
        doc = json.loads(body)
        files, mtimes, etags = doc["files"], doc.get("mtimes") or {}, doc.get("etags") or {}
        if not isinstance(files, dict) or not isinstance(mtimes, dict) or not isinstance(etags, dict):
            raise TypeError("files")
        if not isinstance(doc.get("version", 0), int) or not isinstance(doc.get("created_at", 0), int | float):
            raise TypeError("version")
        if doc.get("parent") is not None and not _MANIFEST.fullmatch(str(doc["parent"])):
            raise ValueError("parent")
        for rel, entry in files.items():
            sha, size = entry
            if not (_SHA256.fullmatch(sha) and isinstance(size, int) and size >= 0 and _safe(rel)):
                raise ValueError(rel)
        if not all(isinstance(v, int) for v in mtimes.values()) or not all(isinstance(v, str) for v in etags.values()):
            raise TypeError("mtimes")
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{store.url}/{name} (named by {ROOT}) is not a spanrl manifest (it holds "
                         f"{_shown(body)}); manifests are written once and never changed, so it was damaged or "
                         "overwritten on the store. Restore it from the bucket's versioning or a backup.") from None
    return {**doc, "files": files, "mtimes": mtimes, "etags": etags}


def _safe(rel: Any) -> bool:
    """A path inside the root: relative, no ``..``, no empty part (a manifest is not trusted to write
    outside the mirror)."""
    if not isinstance(rel, str) or not rel or "\\" in rel:
        return False
    path = PurePosixPath(rel)
    return not path.is_absolute() and all(p not in ("", ".", "..") for p in rel.split("/"))


def _shown(body: bytes) -> str:
    text = body[:60].decode("utf-8", "replace")
    return repr(text) + ("..." if len(body) > 60 else "")


def _newest_hint(store: ObjectStore) -> str:
    """The pointer to the newest manifest the root holds, ready to write into ``ROOT`` by hand."""
    names = sorted(k for k in store.listing(f"{MANIFESTS}/") if _MANIFEST.fullmatch(k))
    if not names:
        return f"no manifest is left under {MANIFESTS}/, so the root's state is lost: start it again."
    newest = names[-1]
    version = int(_MANIFEST.fullmatch(newest).group(1)[:8])  # type: ignore[union-attr]
    return (f"or point it at the newest manifest, {newest}: write "
            f'{{"version": {version}, "manifest": "{newest}"}} into {ROOT} (if that manifest\'s run crashed '
            "before it published, its state is newer than the one that was current; check its command and "
            "created_at).")
