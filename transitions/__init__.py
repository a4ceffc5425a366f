"""The transition snapshot contract (DESIGN §5): schema, writer, reader. No builder logic here."""

from spanrl.transitions.schema import SCHEMA_VERSION, TRANSITION_SCHEMA
from spanrl.transitions.snapshot import load_snapshot, open_snapshot, read_snapshot, write_snapshot

__all__ = ["SCHEMA_VERSION", "TRANSITION_SCHEMA", "load_snapshot", "open_snapshot", "read_snapshot", "write_snapshot"]
