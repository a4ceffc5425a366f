"""``spanrl lake gc``: delete the objects of an S3 data root that no state worth keeping names (docs/scale.md).

A root on object storage only ever adds objects (spanrl/remote.py): every state is a manifest naming
immutable ``objects/<sha256>``, and a run that dies before the ``ROOT`` swap leaves the objects it
uploaded (and maybe its manifest) named by no published state. Nothing else removes them, and every
older state keeps its files alive too. gc keeps:

- the current state (the manifest ``ROOT`` names) and every published state **replaced** less than the
  retention ago (``--keep-days``, never less than ``READER_GRACE_S``): a reader that started on a state
  just before a writer replaced it (``spanrl sql`` reads objects in place, spanrl/inplace.py) still finds
  its objects;
- every object such a manifest names.

It deletes every other ``objects/<sha256>`` and every other manifest: those of runs that never published
(a manifest of a version past the current one, or a rival of a published version on the chain of
``parent`` links the manifests record) and those of states replaced before the retention. Keys spanrl did
not write under the prefix are left alone and counted. gc is a writer: it holds the root's lease, so no
run is uploading while it lists and deletes (a second writer, or gc, is refused naming the holder), and
it renews the lease between delete batches. Manifests written before the ``parent`` link existed are
kept by their successor's age, conservatively (a rival among them cannot be told from the published one).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from spanrl.errors import InputError
from spanrl.lease import LEASE, acquire_lease
from spanrl.rootstate import MANIFESTS, OBJECTS, ROOT, missing_root, parse_manifest, read_state
from spanrl.storage import ObjectStore

READER_GRACE_S = 3600.0  # a state replaced this recently is kept whatever --keep-days says: readers may be on it
DELETE_BATCH = 1000
_OBJECT = re.compile(rf"{OBJECTS}/[0-9a-f]{{64}}")
_MANIFEST = re.compile(rf"{MANIFESTS}/(\d{{8}})-[0-9A-Za-z]+\.json")


@dataclass
class GcPlan:
    """What gc keeps and removes, each removed key with its size and why."""

    url: str
    current: str
    keep_s: float
    kept: list[str] = field(default_factory=list)  # manifests kept (the current one first)
    remove: dict[str, tuple[int, str]] = field(default_factory=dict)  # key -> (bytes, why)
    live_objects: int = 0
    foreign: int = 0  # keys under the prefix spanrl did not write: left alone
    dry_run: bool = False

    @property
    def bytes(self) -> int:
        return sum(size for size, _ in self.remove.values())

    def summary(self) -> list[str]:
        days = self.keep_s / 86400
        head = (f"{self.url}: kept version {self.current} and {len(self.kept) - 1} older state(s) replaced within "
                f"{days:g} day(s) ({self.live_objects:,} object(s) they name)")
        if self.foreign:
            head += f"; {self.foreign} key(s) spanrl did not write were left alone"
        if not self.remove:
            return [head, "nothing to collect"]
        objects = sum(1 for k in self.remove if k.startswith(f"{OBJECTS}/"))
        verb = "would remove" if self.dry_run else "removed"
        lines = [head, f"{verb} {objects} object(s) and {len(self.remove) - objects} manifest(s), "
                       f"{self.bytes / 1e6:,.1f} MB:"]
        by_why: dict[str, list[str]] = {}
        for key, (_, why) in sorted(self.remove.items()):
            by_why.setdefault(why, []).append(key)
        for why, keys in by_why.items():
            lines.append(f"  {len(keys)} {why}")
            lines.extend(f"    {k}" for k in keys[:20])
            if len(keys) > 20:
                lines.append(f"    ... and {len(keys) - 20} more")
        return lines


def plan_gc(store: ObjectStore, keep_days: float, now: float | None = None) -> GcPlan:
    """What gc would remove from ``store``'s root now (reads only). Call it under the lease."""
    now = time.time() if now is None else now
    state = read_state(store)
    if state.etag is None or state.manifest is None:
        raise missing_root(store.url)
    listing = store.listing()
    docs = {key: _read(store, key) for key in sorted(listing) if _MANIFEST.fullmatch(key)}
    if state.manifest not in docs:
        docs[state.manifest] = _read(store, state.manifest)
    chain = [state.manifest]  # the published states, newest first, as far as parent links reach
    while "parent" in docs[chain[-1]] and docs[chain[-1]]["parent"] in docs and len(chain) < len(docs):
        chain.append(docs[chain[-1]]["parent"])
    oldest = docs[chain[-1]]
    # linked: the oldest state kept on the chain records its parent (gone: collected before, or None: the
    # first state), so a manifest of a lower version off the chain is older than it or never published
    linked = "parent" in oldest
    replaced_at = {chain[i]: float(docs[chain[i - 1]].get("created_at", now)) for i in range(1, len(chain))}
    keep_s = max(keep_days * 86400, READER_GRACE_S)
    plan = GcPlan(store.url, f"{state.version} ({state.manifest})", keep_s)
    why: dict[str, str] = {}
    for name, doc in docs.items():
        version = int(doc.get("version", 0))
        if name == state.manifest:
            continue
        if name in replaced_at:
            gone = replaced_at[name]
        elif version > state.version or linked or version >= int(oldest.get("version", 0)):
            why[name] = "of run(s) that never published (not on the chain of published states)"
            continue
        else:  # before the parent links: replaced no later than the oldest linked state was written
            gone = float(oldest.get("created_at", now))
        if now - gone < keep_s:
            plan.kept.append(name)
        else:
            why[name] = f"of state(s) replaced more than {keep_s / 86400:g} day(s) ago"
    plan.kept = [state.manifest, *sorted(plan.kept, reverse=True)]
    live = {sha for name in plan.kept for sha, _ in docs[name]["files"].values()}
    plan.live_objects = len(live)
    orphan_why = {sha: w for name, w in why.items() for sha, _ in docs[name]["files"].values()}
    for key, (_, size) in listing.items():
        if _MANIFEST.fullmatch(key):
            if key in why:
                plan.remove[key] = (size, f"manifest(s) {why[key]}")
        elif _OBJECT.fullmatch(key):
            sha = key[len(OBJECTS) + 1:]
            if sha not in live:
                plan.remove[key] = (size, f"object(s) {orphan_why.get(sha, 'that no manifest names (a run killed before its manifest)')}")
        elif key not in (ROOT, LEASE):
            plan.foreign += 1
    return plan


def _read(store: ObjectStore, key: str) -> dict[str, Any]:
    got = store.get(key)
    if got is None:
        return {"files": {}}  # deleted since the listing (it was not ours to keep)
    try:
        return parse_manifest(store, key, got.body)
    except InputError:
        raise InputError(f"{store.url}/{key} is not a spanrl manifest, so what it names cannot be told; gc removed "
                         "nothing. Restore it from the bucket's versioning or a backup, or delete it if no state "
                         "should ever go back to it, then run `spanrl lake gc` again.") from None


def collect_garbage(url: str, keep_days: float, dry_run: bool = False, now: float | None = None) -> GcPlan:
    """Plan and (unless ``dry_run``) delete under the root's lease; exit 2 naming the holder while another
    writer holds it, and nothing deleted once the lease is lost."""
    store = ObjectStore(url)
    if store.get(ROOT) is None:  # before the lease: nothing written under a typo
        raise missing_root(store.url)
    lease = acquire_lease(store, "spanrl lake gc")
    try:
        plan = plan_gc(store, keep_days, now)
        plan.dry_run = dry_run
        if not dry_run:
            keys = sorted(plan.remove)
            for start in range(0, len(keys), DELETE_BATCH):
                lease.check()  # renewed now: ours for another TTL, so no writer runs while this batch goes
                store.delete_many(keys[start:start + DELETE_BATCH])
        return plan
    finally:
        lease.release()
