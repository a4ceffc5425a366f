"""Old snapshots: ``spanrl transitions clean --keep N`` and ``spanrl ingest --keep-snapshots N``.

A nightly ingest writes a snapshot per night. Cleanup keeps the N newest and, whatever N, every
snapshot something still points at:

- the one ``transitions/LATEST`` names (what ``spanrl train`` reads next);
- every ``snapshot_id`` a training run recorded: the lines of ``adapters/cycles.jsonl``, each
  adapter's ``training_state.json`` (``--new-only`` reads the rollout ids of every snapshot its
  adapter chain trained on, and reproducing a cycle needs its rows) and ``demo/cycles.jsonl``.

Drafts (hidden ``.tmp-*`` folders of a build in progress) are never listed, so never deleted. A
snapshot goes with ``publish.discard``: renamed hidden first, so a reader never sees half of it;
parts hard-linked into a newer snapshot stay alive there. Only ``DATA/adapters`` is read for
training records: adapters written elsewhere with ``spanrl train --out`` are not seen. Those records
are the trainer's and the demo's files, read through ``spanrl.layout.recorded_snapshot_ids`` (the
root package: transitions may not import either stage).
"""

from __future__ import annotations

from pathlib import Path

from spanrl.ingest.lake import lake_lock
from spanrl.layout import lake_dir, latest_snapshot_id, recorded_snapshot_ids
from spanrl.options import check_keep
from spanrl.publish import Cleanup, discard, sweep_trash
from spanrl.transitions.snapshot import list_snapshots, transitions_dir

__all__ = ["clean_snapshots", "plan_snapshot_cleanup", "recorded_snapshot_ids"]


def plan_snapshot_cleanup(data: Path, keep: int) -> Cleanup:
    """Decide, reading only: the ``keep`` newest snapshots plus every protected one stay."""
    check_keep("--keep", keep)
    plan = Cleanup()
    latest = latest_snapshot_id(data)
    recorded = recorded_snapshot_ids(data)
    for i, folder in enumerate(list_snapshots(data)):  # newest first
        sid = folder.name
        if i < keep:
            plan.keep[sid] = f"one of the {keep} newest"
        elif sid == latest:
            plan.keep[sid] = "transitions/LATEST"
        elif sid in recorded:
            plan.keep[sid] = "a training run used it"
        else:
            plan.remove.append(sid)
            plan.freed += _unshared_bytes(folder)
    return plan


def clean_snapshots(data: Path, keep: int, dry_run: bool = False) -> Cleanup:
    """Delete the snapshots ``plan_snapshot_cleanup`` lets go. Holds the lake writer lock, so no
    build publishes a snapshot or moves LATEST while the plan is made and carried out."""
    data = Path(data)
    with lake_lock(lake_dir(data)):
        plan = plan_snapshot_cleanup(data, keep)
        plan.dry_run = dry_run
        if not dry_run:
            sweep_trash(transitions_dir(data))
            for sid in plan.remove:
                discard(transitions_dir(data) / sid)
    return plan


def _unshared_bytes(folder: Path) -> int:
    """Bytes deleting ``folder`` gives back: files with no hard link elsewhere."""
    return sum(st.st_size for p in folder.rglob("*") if p.is_file() and (st := p.stat()).st_nlink == 1)
