"""Old adapters (``spanrl adapters clean --keep N``): the N newest by time stay, and so does every
protected one, whatever N: LATEST, those demo/cycles.jsonl names, every ancestor of a kept adapter
(``--new-only`` walks that chain) and the parent of a cycle being saved; drafts are never touched.
Adapters here are hand-made folders (no torch); tests/trainer/test_train.py runs it after real cycles."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.publish import write_pointer
from spanrl.trainer.retention import clean_adapters, list_adapters


def _adapter(root: Path, cycle: int, day: int, parent: str | None) -> str:
    """An adapter folder trained on 2026-01-<day> (the time in its id), continuing ``parent``."""
    cycle_id = f"{cycle:04d}-202601{day:02d}T000000000000Z"
    folder = root / cycle_id
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "adapter_model.safetensors").write_bytes(b"w" * 100)
    (folder / "training_state.json").write_text(json.dumps({"cycle": cycle, "cycle_id": cycle_id, "parent": parent}))
    return cycle_id


def _history(root: Path) -> dict[str, str]:
    """A1 -> A2 -> B3 (rolled back past), A2 -> A3 (LATEST) -> C4 (a candidate never promoted)."""
    a1 = _adapter(root, 1, 1, None)
    a2 = _adapter(root, 2, 2, a1)
    b3 = _adapter(root, 3, 3, a2)
    a3 = _adapter(root, 3, 4, a2)
    c4 = _adapter(root, 4, 5, a3)
    write_pointer(root, a3)
    return {"a1": a1, "a2": a2, "b3": b3, "a3": a3, "c4": c4}


def _left(root: Path) -> set[str]:
    return {p.name for p in list_adapters(root)}


def test_ancestors_of_kept_adapters_stay_and_branches_go(tmp_path: Path) -> None:
    root = tmp_path / "adapters"
    ids = _history(root)
    dry = clean_adapters(root, keep=1, dry_run=True)
    assert dry.remove == [ids["b3"]] and ids["b3"] in _left(root)
    assert dry.freed == sum(p.stat().st_size for p in (root / ids["b3"]).iterdir()) > 100
    plan = clean_adapters(root, keep=1)
    assert _left(root) == {ids[k] for k in ("a1", "a2", "a3", "c4")}
    assert plan.keep[ids["c4"]] == "one of the 1 newest" and plan.keep[ids["a3"]] in ("adapters/LATEST", f"parent of {ids['c4']}")
    assert plan.keep[ids["a1"]] == f"parent of {ids['a2']}"
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # deleted hidden-first, nothing left over


def test_newest_is_by_time_so_a_fresh_chain_counts_as_new(tmp_path: Path) -> None:
    root = tmp_path / "adapters"
    ids = _history(root)
    fresh = _adapter(root, 1, 9, None)  # `spanrl train --fresh`: cycle 1 again, but the newest
    write_pointer(root, fresh)
    plan = clean_adapters(root, keep=1)
    assert _left(root) == {fresh} and sorted(plan.remove) == sorted(ids.values())


def test_latest_alone_protects_an_old_adapter(tmp_path: Path) -> None:
    root = tmp_path / "adapters"
    ids = _history(root)
    fresh = _adapter(root, 1, 9, None)
    write_pointer(root, ids["a1"])  # rolled back all the way
    clean_adapters(root, keep=1)
    assert _left(root) == {fresh, ids["a1"]}


def test_demo_record_and_a_draft_being_saved_protect_their_adapters(tmp_path: Path) -> None:
    root = tmp_path / "adapters"
    ids = _history(root)
    fresh = _adapter(root, 1, 9, None)
    write_pointer(root, fresh)
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "cycles.jsonl").write_text(json.dumps({"cycle": 1, "policy": "base", "candidate": ids["b3"],
                                                                "adapter": ids["a2"]}) + "\n")
    draft = root / ".tmp-0004-20260110T000000000000Z"  # `spanrl train` saving a cycle that continues C4
    draft.mkdir()
    (draft / "training_state.json").write_text(json.dumps({"parent": ids["c4"]}))
    plan = clean_adapters(root, keep=1, data=tmp_path)
    assert plan.remove == [] and _left(root) == {fresh, *ids.values()} and draft.is_dir()
    assert plan.keep[ids["b3"]] == "the demo's record names it" and plan.keep[ids["c4"]] == "parent of a cycle being saved"


def test_cli_adapters_clean(tmp_path: Path) -> None:
    ids = _history(tmp_path / "adapters")
    runner = CliRunner()
    dry = runner.invoke(cli, ["adapters", "clean", "--data", str(tmp_path), "--keep", "1", "--dry-run"])
    assert dry.exit_code == 0 and f"would delete {ids['b3']}" in dry.output and len(_left(tmp_path / "adapters")) == 5
    assert runner.invoke(cli, ["adapters", "clean", "--data", str(tmp_path), "--keep", "0"]).exit_code == 2
    out = tmp_path / "elsewhere"
    other = _history(out)
    done = runner.invoke(cli, ["adapters", "clean", "--data", str(tmp_path), "--out", str(out), "--keep", "1"])
    assert done.exit_code == 0 and other["b3"] not in _left(out) and len(_left(tmp_path / "adapters")) == 5
