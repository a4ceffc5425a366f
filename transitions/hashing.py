"""``spanrl_sha256(VARCHAR)``: the snapshot's digests and content hash hashed by OpenSSL, not DuckDB.

Every build hashes the text of every transition row it writes (``snapshot/rollout_digests.sql``: ≈ 400 MB
at 600k spans), and every reader of a snapshot hashes it again. DuckDB's ``sha256()`` runs at ≈ 300 MB/s on
the build machine; Python's ``hashlib`` is OpenSSL's, which uses the CPU's SHA instructions: hashing the
600k night's rows 1.12 → 0.47 CPU s (bench/pieces/digests.py, its text made in 1.06 more). A scalar function:
one call per rollout, and no Arrow string buffer to overflow (a chunk of 2,048 long rollouts can pass 2 GB).
The hex digests are DuckDB's own, byte for byte (tests/transitions/test_hashing.py): no stored hash changes.
"""

from __future__ import annotations

import hashlib

import duckdb

NAME = "spanrl_sha256"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def register_sha256(con: duckdb.DuckDBPyConnection) -> None:
    """``spanrl_sha256`` on ``con``, once (a second registration is a no-op)."""
    try:
        con.create_function(NAME, _sha256, [duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"),
                            side_effects=False)
    except duckdb.NotImplementedException:  # "already created": this connection has it
        pass


# The Python functions a step's SQL may call, by name: run_steps registers those a Step lists.
FUNCTIONS = {NAME: register_sha256}
