"""The snapshot contract: atomic publish, manifest, content hash, schema-version refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spanrl.errors import InputError
from spanrl.transitions import SCHEMA_VERSION, TRANSITION_SCHEMA, load_snapshot, read_snapshot, write_snapshot
from spanrl.transitions.snapshot import content_hash, open_snapshot, resolve_snapshot


def _rows(n: int, reward: float = 1.0) -> pa.Table:
    cols = {name: [None] * n for name in TRANSITION_SCHEMA.names}
    cols.update(
        snapshot_id=[""] * n,
        rollout_id=[f"r{i // 2}" for i in range(n)],
        step=[i % 2 for i in range(n)],
        n_steps=[2] * n,
        prompt_messages=[json.dumps([{"role": "user", "content": f"q{i}"}]) for i in range(n)],
        response_message=[json.dumps({"role": "assistant", "content": f"a{i}"}) for i in range(n)],
        prompt_token_ids=[[1, 2, 3]] * n,
        final_reward=[reward] * n,
        token_source=["engine"] * n,
    )
    return pa.table(cols, schema=TRANSITION_SCHEMA)


def test_write_then_read_roundtrip(tmp_path: Path) -> None:
    folder = write_snapshot(tmp_path, _rows(4), config={"credit": "identical"}, source_files=["b", "a"])
    assert (tmp_path / "transitions" / "LATEST").read_text().strip() == folder.name
    table, manifest = read_snapshot(tmp_path, "LATEST")
    assert table.num_rows == 4 and manifest["rows"] == 4
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["source_files"] == ["a", "b"]
    assert set(table.column("snapshot_id").to_pylist()) == {folder.name}
    assert load_snapshot("LATEST", data=tmp_path).height == 4


def test_same_rows_same_hash_different_rows_different_hash(tmp_path: Path) -> None:
    a = write_snapshot(tmp_path, _rows(4))
    b = write_snapshot(tmp_path, _rows(4))
    c = write_snapshot(tmp_path, _rows(4, reward=0.5))
    h = [json.loads((f / "manifest.json").read_text())["content_hash"] for f in (a, b, c)]
    assert a != b and h[0] == h[1] and h[0] != h[2]


def test_draft_hash_is_computed_once_and_follows_new_parts(tmp_path: Path) -> None:
    """The builder asks for the hash (to compare with LATEST), then commit records it: one read of
    the parts, and a part written after the first ask is not missed."""
    table = _rows(30)
    with open_snapshot(tmp_path) as draft:
        draft.write_part(table.slice(0, 10), 0)
        first = draft.content_hash()
        draft.write_part(table.slice(10, 20), 1)
        assert draft.content_hash() != first and draft.content_hash() == content_hash(draft.tmp_dir)
        folder = draft.commit({}, [])
    assert json.loads((folder / "manifest.json").read_text())["content_hash"] == content_hash(folder)


def test_failed_draft_leaves_nothing_visible(tmp_path: Path) -> None:
    write_snapshot(tmp_path, _rows(2))
    before = (tmp_path / "transitions" / "LATEST").read_text()
    with pytest.raises(RuntimeError), open_snapshot(tmp_path) as draft:
        draft.write_part(_rows(2))
        raise RuntimeError("crash before commit")
    names = [p.name for p in (tmp_path / "transitions").iterdir()]
    assert not [n for n in names if n.startswith(".tmp-")]
    assert (tmp_path / "transitions" / "LATEST").read_text() == before


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    folder = write_snapshot(tmp_path, _rows(2))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema_version"] = SCHEMA_VERSION + 1
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="schema version"):
        read_snapshot(tmp_path)


def test_missing_and_corrupt_snapshots_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no snapshot yet"):
        resolve_snapshot(tmp_path)
    folder = write_snapshot(tmp_path, _rows(2))
    (folder / "part-00000.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="corrupt"):
        read_snapshot(tmp_path)
    with pytest.raises(InputError, match="no such snapshot"):
        read_snapshot(tmp_path, "nope")


def test_wrong_columns_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="missing"), open_snapshot(tmp_path) as draft:
        draft.write_part(pa.table({"rollout_id": ["r"]}))
