"""Stage 2: lake -> rollouts, rewards, AIR, credit, advantages -> transition snapshots (docs/transitions.md).

It owns the snapshot files: the schema, the writer and the reader below are the only way in.
The names are resolved on first use (PEP 562), so importing a stage-2 module does not load pyarrow:
``spanrl ingest`` builds with DuckDB alone, and pyarrow's import is a third of a small night's fixed cost.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMA_VERSION", "TRANSITION_SCHEMA", "load_snapshot", "open_snapshot", "read_snapshot", "write_snapshot"]


def __getattr__(name: str) -> Any:
    if name in ("SCHEMA_VERSION", "TRANSITION_SCHEMA"):
        from spanrl.transitions import schema

        return getattr(schema, name)
    if name in __all__:
        from spanrl.transitions import snapshot

        return getattr(snapshot, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
