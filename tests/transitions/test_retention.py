"""Old snapshots (``spanrl transitions clean --keep N``, ``spanrl ingest --keep-snapshots N``): the N
newest stay, and so does every protected one, whatever N: LATEST, every snapshot a training run
recorded (adapters/cycles.jsonl, an adapter's training_state.json, demo/cycles.jsonl); drafts are
never touched; a snapshot sharing hard-linked parts with a newer one can go without harming it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.ingest.load import lake_lock
from spanrl.publish import write_pointer
from spanrl.transitions import read_snapshot, write_snapshot
from spanrl.transitions.retention import clean_snapshots
from spanrl.transitions.snapshot import list_snapshots, transitions_dir
from tests.transitions.test_snapshot_io import _rows


def _snapshots(data: Path, n: int) -> list[str]:
    """``n`` snapshots, oldest first (ids sort by creation time)."""
    ids = [write_snapshot(data, _rows(2)).name for _ in range(n)]
    assert ids == sorted(ids)
    return ids


def _left(data: Path) -> list[str]:
    return sorted(p.name for p in list_snapshots(data))


def test_keeps_the_n_newest_and_a_dry_run_deletes_nothing(tmp_path: Path) -> None:
    ids = _snapshots(tmp_path, 4)
    dry = clean_snapshots(tmp_path, keep=2, dry_run=True)
    assert dry.remove == [ids[1], ids[0]] and _left(tmp_path) == ids and dry.freed > 0
    plan = clean_snapshots(tmp_path, keep=2)
    assert _left(tmp_path) == ids[2:] and set(plan.keep) == set(ids[2:])
    assert not [p for p in transitions_dir(tmp_path).iterdir() if p.name.startswith(".")]
    assert clean_snapshots(tmp_path, keep=2).remove == []  # re-running: nothing more


def _protect_latest(data: Path, sid: str) -> None:
    write_pointer(transitions_dir(data), sid)


def _protect_cycle_line(data: Path, sid: str) -> None:
    (data / "adapters").mkdir(exist_ok=True)
    (data / "adapters" / "cycles.jsonl").write_text(json.dumps({"cycle": 1, "cycle_id": "0001-x", "snapshot_id": sid}) + "\n")


def _protect_training_state(data: Path, sid: str) -> None:
    folder = data / "adapters" / "0001-20260101T000000000000Z"
    folder.mkdir(parents=True)
    (folder / "training_state.json").write_text(json.dumps({"cycle": 1, "snapshot_id": sid, "parent": None}))


def _protect_demo_record(data: Path, sid: str) -> None:
    (data / "demo").mkdir()
    (data / "demo" / "cycles.jsonl").write_text(json.dumps({"cycle": 1, "policy": "base", "snapshot_id": sid}) + "\n")


@pytest.mark.parametrize("protect,why", [(_protect_latest, "transitions/LATEST"),
                                         (_protect_cycle_line, "a training run used it"),
                                         (_protect_training_state, "a training run used it"),
                                         (_protect_demo_record, "a training run used it")])
def test_protected_snapshots_stay_whatever_n(tmp_path: Path, protect, why: str) -> None:
    ids = _snapshots(tmp_path, 3)
    protect(tmp_path, ids[0])
    plan = clean_snapshots(tmp_path, keep=1)
    assert _left(tmp_path) == [ids[0], ids[2]] and plan.remove == [ids[1]]
    assert plan.keep[ids[0]] == why
    read_snapshot(tmp_path, ids[0])  # whole: its content hash still checks


def test_drafts_tables_and_leftover_trash(tmp_path: Path) -> None:
    ids = _snapshots(tmp_path, 2)
    root = transitions_dir(tmp_path)
    draft = root / ".tmp-20990101T000000000000Z"  # a build writing its parts right now
    (draft / "part-00000.parquet").parent.mkdir()
    (draft / "part-00000.parquet").write_bytes(b"partial")
    (root / "_tables" / "b1").mkdir(parents=True)  # stage-2 tables for SQL: not a snapshot
    (root / ".trash-old").mkdir()  # a cleanup killed mid-delete
    clean_snapshots(tmp_path, keep=1)
    assert _left(tmp_path) == ids[1:] and draft.is_dir() and (root / "_tables" / "b1").is_dir()
    assert not (root / ".trash-old").exists()


def test_hard_linked_parts_survive_deleting_the_older_snapshot(tmp_path: Path) -> None:
    """The incremental builder links unchanged parts of the previous snapshot: deleting the older
    folder leaves the newer one whole, and only bytes no one else links count as freed."""
    (old,) = _snapshots(tmp_path, 1)
    root = transitions_dir(tmp_path)
    new = "29990101T000000000000Z"
    (root / new).mkdir()
    for part in (root / old).iterdir():  # parts (and any other row file), not the manifest
        if part.name != "manifest.json":
            os.link(part, root / new / part.name)
    manifest = json.loads((root / old / "manifest.json").read_text())
    (root / new / "manifest.json").write_text(json.dumps({**manifest, "snapshot_id": new}))
    write_pointer(root, new)
    plan = clean_snapshots(tmp_path, keep=1)
    assert plan.remove == [old] and plan.freed == len(json.dumps(manifest, indent=2, sort_keys=True))
    table, _ = read_snapshot(tmp_path, new)
    assert table.num_rows == 2


def test_cli_clean_ingest_keep_snapshots_lock_and_bad_input(tmp_path: Path) -> None:
    ids = _snapshots(tmp_path, 3)
    runner = CliRunner()
    dry = runner.invoke(cli, ["transitions", "clean", "--data", str(tmp_path), "--keep", "1", "--dry-run"])
    assert dry.exit_code == 0 and f"would delete {ids[0]}" in dry.output and _left(tmp_path) == ids
    for bad in (["transitions", "clean", "--data", str(tmp_path), "--keep", "0"],
                ["transitions", "clean", "--data", str(tmp_path)]):
        assert runner.invoke(cli, bad).exit_code == 2
    errors: list[str] = []
    with lake_lock(tmp_path / "lake"):  # a build or ingest holds the lake: cleanup waits its turn
        t = threading.Thread(target=lambda: errors.append(_error(lambda: clean_snapshots(tmp_path, keep=1))))
        t.start()
        t.join()
    assert "another `spanrl ingest`" in errors[0] and _left(tmp_path) == ids
    (tmp_path / "spanrl.toml").write_text("[ingest]\nkeep_snapshots = 2\n")
    run = runner.invoke(cli, ["ingest", "--data", str(tmp_path), "--no-transitions"])
    assert run.exit_code == 0, run.output
    assert _left(tmp_path) == ids[1:] and f"deleted {ids[0]}" in run.output
    run = runner.invoke(cli, ["ingest", "--data", str(tmp_path), "--no-transitions", "--keep-snapshots", "1"])
    assert run.exit_code == 0 and _left(tmp_path) == ids[2:]


def _error(fn) -> str:
    try:
        fn()
    except InputError as exc:
        return str(exc)
    return ""
