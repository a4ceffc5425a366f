"""Old adapters: ``spanrl adapters clean --keep N`` and ``spanrl train --keep-adapters N``.

Keeps the N newest adapters (by the time in their cycle id: a ``--fresh`` chain restarts the cycle
number, not the clock) and, whatever N, every adapter something still points at:

- the one ``adapters/LATEST`` names (what ``spanrl serve`` loads and the next ``spanrl train`` continues);
- every adapter ``demo/cycles.jsonl`` names (each demo cycle's policy, candidate and result);
- the parent of every adapter kept, and its parent, up the chain (``parent`` in training_state.json):
  ``spanrl train --new-only`` walks that chain to know which rollouts were already trained on,
  and the parent of a cycle still being saved (a hidden ``.tmp-*`` draft, itself never touched).

So in one chain of nightly cycles continuing LATEST every ancestor stays; what goes is what left
the chain: candidates never promoted, adapters rolled back past, chains abandoned with ``--fresh``.
A line in ``adapters/cycles.jsonl`` records that a cycle ran; it does not keep its adapter (the line
stays, for ``spanrl report``). The snapshots those lines name are kept by ``spanrl transitions clean``.
"""

from __future__ import annotations

from pathlib import Path

from spanrl.layout import demo_record
from spanrl.options import check_keep
from spanrl.publish import TMP_PREFIX, Cleanup, discard, read_pointer, sweep_trash
from spanrl.trainer.adapter import adapter_parts, read_state

DEMO_KEYS = ("policy", "candidate", "adapter")  # the adapter ids a demo cycle's record names


def list_adapters(root: Path) -> list[Path]:
    """Published adapter folders under ``root``, newest first (drafts are hidden, so never listed)."""
    if not Path(root).is_dir():
        return []
    folders = [p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith(".")
               and adapter_parts(p)]
    return sorted(folders, key=lambda p: (p.name.split("-", 1)[-1], p.name), reverse=True)


def plan_adapter_cleanup(root: Path, keep: int, data: Path | None = None) -> Cleanup:
    """Decide, reading only. ``data``: the data root whose ``demo/cycles.jsonl`` is read."""
    check_keep("--keep", keep)
    plan = Cleanup()
    latest = read_pointer(root)  # before listing: an adapter promoted meanwhile is listed, so kept as newest
    folders = list_adapters(root)
    names = {f.name for f in folders}
    for f in folders[:keep]:
        plan.keep[f.name] = f"one of the {keep} newest"
    if latest in names:
        plan.keep.setdefault(latest, "adapters/LATEST")
    for row in demo_record(data) if data is not None else []:
        for key in DEMO_KEYS:
            if row.get(key) in names:
                plan.keep.setdefault(row[key], "the demo's record names it")
    for draft in Path(root).glob(f"{TMP_PREFIX}*"):  # one without a training state yet names no parent
        parent = read_state(draft).get("parent")
        if parent in names:
            plan.keep.setdefault(parent, "parent of a cycle being saved")
    pending = list(plan.keep)
    while pending:  # ancestors of everything kept
        child = pending.pop()
        parent = read_state(Path(root) / child).get("parent")
        if parent in names and parent not in plan.keep:
            plan.keep[parent] = f"parent of {child}"
            pending.append(parent)
    plan.remove = [f.name for f in folders if f.name not in plan.keep]
    plan.freed = sum(p.stat().st_size for name in plan.remove for p in (Path(root) / name).rglob("*") if p.is_file())
    return plan


def clean_adapters(root: Path, keep: int, data: Path | None = None, dry_run: bool = False) -> Cleanup:
    """Delete the adapters ``plan_adapter_cleanup`` lets go (each hidden first, then removed)."""
    plan = plan_adapter_cleanup(root, keep, data)
    plan.dry_run = dry_run
    if not dry_run:
        sweep_trash(root)
        for name in plan.remove:
            discard(Path(root) / name)
    return plan

