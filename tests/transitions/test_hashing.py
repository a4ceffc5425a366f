"""spanrl_sha256 (transitions/hashing.py) is DuckDB's sha256, byte for byte: the digests and content hashes
that snapshots already store stay valid after the switch to OpenSSL's hashing."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa

from spanrl.transitions import SCHEMA_VERSION, TRANSITION_SCHEMA, write_snapshot
from spanrl.transitions.hashing import register_sha256
from spanrl.transitions.snapshot import DIGESTS, content_hash
from spanrl.transitions.sqlfiles import read_sql

TEXTS = ["", "a", "line one\nline two\r\n", "naïve café ✓ 日本語 🙂", "\t\x01control", "x" * 1_000_003,
         json.dumps([{"role": "user", "content": "Ünïcödé " * 500}], ensure_ascii=False)]


def test_same_hex_digest_as_duckdb_for_any_text() -> None:
    con = duckdb.connect()
    register_sha256(con)
    register_sha256(con)  # a second registration on one connection is a no-op, not an error
    con.register("t", pa.table({"s": pa.array([*TEXTS, None], pa.string())}))
    got = con.execute("SELECT s IS NULL, spanrl_sha256(s), sha256(s) FROM t").fetchall()
    assert len(got) == len(TEXTS) + 1
    for is_null, ours, theirs in got:
        assert ours == theirs and (ours is None) == is_null


def _rows() -> pa.Table:
    n = 6
    cols = {name: [None] * n for name in TRANSITION_SCHEMA.names}
    cols.update(
        snapshot_id=[""] * n, rollout_id=[f"r{i // 3}" for i in range(n)], step=[i % 3 for i in range(n)],
        n_steps=[3] * n, final_reward=[float(i % 2) for i in range(n)], token_source=["engine"] * n,
        prompt_messages=[json.dumps([{"role": "user", "content": TEXTS[i % len(TEXTS)]}], ensure_ascii=False)
                         for i in range(n)],
        response_message=[json.dumps({"role": "assistant", "content": f"réponse {i} ✓"}, ensure_ascii=False)
                          for i in range(n)],
    )
    return pa.table(cols, schema=TRANSITION_SCHEMA)


def test_stored_digests_and_content_hash_are_duckdbs_sha256(tmp_path: Path) -> None:
    folder = write_snapshot(tmp_path, _rows(), config={"credit": "identical"})
    manifest = json.loads((folder / "manifest.json").read_text())
    con = duckdb.connect()
    parts = [str(p) for p in sorted(folder.glob("part-*.parquet"))]
    con.execute(f"CREATE VIEW transition_rows AS SELECT * FROM read_parquet({parts!r})")
    duckdb_digests = read_sql("snapshot/rollout_digests").replace("spanrl_sha256(", "sha256(")
    assert "spanrl_sha256(" not in duckdb_digests
    expected = dict(con.execute(f"SELECT rollout_id, digest FROM ({duckdb_digests})").fetchall())
    stored = dict(con.execute(f"SELECT rollout_id, digest FROM read_parquet('{folder / DIGESTS}')").fetchall())
    assert stored == expected and len(expected) == 2
    # the content hash over those digests, by DuckDB's sha256 (no advantages table: the rows carry theirs)
    con.execute(f"CREATE VIEW _hash_digests AS SELECT rollout_id, digest FROM read_parquet('{folder / DIGESTS}')")
    con.execute("CREATE VIEW _hash_advantages AS SELECT NULL::VARCHAR AS rollout_id, NULL::DOUBLE AS a_r, "
                "NULL::DOUBLE AS a_air, NULL::DOUBLE AS air_scale")
    duckdb_hash = read_sql("snapshot/content_hash").replace("spanrl_sha256(", "sha256(")
    (want,) = con.execute(duckdb_hash, {"schema_version": str(SCHEMA_VERSION)}).fetchone()
    assert manifest["content_hash"] == want == content_hash(folder)
