"""Stage 2: lake -> rollouts, rewards, AIR, credit, advantages -> transition snapshots (docs/transitions.md).

It owns the snapshot files: the schema, the writer and the reader below are the only way in.
"""

from spanrl.transitions.schema import SCHEMA_VERSION, TRANSITION_SCHEMA
from spanrl.transitions.snapshot import load_snapshot, open_snapshot, read_snapshot, write_snapshot

__all__ = ["SCHEMA_VERSION", "TRANSITION_SCHEMA", "load_snapshot", "open_snapshot", "read_snapshot", "write_snapshot"]
