"""The promotion gate and rollback: adapters/LATEST moves only by a whole-folder pointer swap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.publish import draft_folder, publish, read_pointer
from spanrl.trainer.adapter import passes_gate, promote_adapter


def _adapter(root: Path, cycle_id: str, point: bool) -> Path:
    with draft_folder(root, cycle_id) as tmp:
        (tmp / "adapter_config.json").write_text("{}")
        (tmp / "training_state.json").write_text(json.dumps({"cycle_id": cycle_id}))
        return publish(tmp, cycle_id, point=point)


def test_gate_keeps_a_candidate_that_is_worse_by_more_than_the_margin() -> None:
    assert passes_gate(0.55, 0.60, margin=0.1)  # within the margin: promoted
    assert passes_gate(0.70, 0.60, margin=0.0)
    assert not passes_gate(0.45, 0.60, margin=0.1)  # worse by 0.15 > 0.1: kept as a candidate
    assert passes_gate(0.0, None, margin=0.0)  # nothing to protect yet
    assert not passes_gate(None, 0.2, margin=0.1)  # an unscored candidate never replaces a scored policy


def test_candidate_leaves_latest_and_promote_moves_it(tmp_path: Path) -> None:
    _adapter(tmp_path, "0001-a", point=True)
    _adapter(tmp_path, "0002-b", point=False)
    assert read_pointer(tmp_path) == "0001-a" and (tmp_path / "0002-b").is_dir()
    promote_adapter(tmp_path, "0002-b")
    assert read_pointer(tmp_path) == "0002-b"
    promote_adapter(tmp_path, "0001-a")  # rollback is the same one write
    assert read_pointer(tmp_path) == "0001-a"
    for bad in ("0009-missing", "..", ""):
        with pytest.raises(InputError, match="not an adapter folder"):
            promote_adapter(tmp_path, bad)
    assert read_pointer(tmp_path) == "0001-a"


def test_adapters_promote_command(tmp_path: Path) -> None:
    root = tmp_path / "adapters"
    _adapter(root, "0001-a", point=True)
    _adapter(root, "0002-b", point=False)
    (root / "cycles.jsonl").write_text(json.dumps({"cycle": 1, "cycle_id": "0001-a", "promoted": True}) + "\n"
                                       + json.dumps({"cycle": 2, "cycle_id": "0002-b", "promoted": False}) + "\n")
    listed = CliRunner().invoke(cli, ["adapters", "list", "--data", str(tmp_path)])
    assert listed.exit_code == 0 and "0001-a" in listed.output and "candidate" in listed.output
    result = CliRunner().invoke(cli, ["adapters", "promote", "--data", str(tmp_path), "0002-b"])
    assert result.exit_code == 0, result.output
    assert read_pointer(root) == "0002-b"
    result = CliRunner().invoke(cli, ["adapters", "promote", "--data", str(tmp_path), "nope"])
    assert result.exit_code == 2 and "not an adapter folder" in result.output
