"""The transition snapshot schema: the one contract between ingest and trainer (docs/transitions.md).

Bump ``SCHEMA_VERSION`` on any change a reader would notice (a column added, removed, renamed or
retyped); readers refuse snapshots of another version with a message that says how to rebuild.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 3

# (column, Arrow type, nullable). Plain names, so the columns are known without importing pyarrow
# (spanrl ingest writes snapshots with DuckDB alone); TRANSITION_SCHEMA is built from them on first use.
FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("snapshot_id", "string", False),
    ("rollout_id", "string", False),
    ("task_id", "string", True),
    ("trace_id", "string", True),
    ("span_id", "string", True),
    ("step", "int32", False),  # 0..n_steps-1, span-tree then start-time order
    ("n_steps", "int32", False),
    ("agent_name", "string", True),
    ("model", "string", True),
    ("prompt_messages", "string", True),  # JSON list of OpenAI chat messages (the state)
    ("tools", "string", True),  # JSON list of OpenAI tool definitions, or NULL
    ("response_message", "string", True),  # JSON OpenAI assistant message (the action)
    ("finish_reason", "string", True),  # why the engine stopped: 'stop', 'tool_calls', 'length' (cut), ...
    ("prompt_token_ids", "list<int32>", True),  # exact engine ids when known
    ("response_token_ids", "list<int32>", True),
    ("response_logprobs", "list<float32>", True),  # behaviour policy log-probs
    ("token_source", "string", True),  # 'engine' (ids above) | 'text' (re-tokenise)
    ("temperature", "float64", True),
    ("final_reward", "float64", True),  # the rollout's primary reward
    ("step_reward", "float64", True),  # AIR reward attached to this call
    ("return", "float64", True),  # credit-assigned return of this call
    ("advantage", "float64", True),
    ("is_last", "bool", True),
    ("source_files", "list<string>", True),
)

COLUMNS = [name for name, _, _ in FIELDS]


@cache
def transition_schema() -> pa.Schema:
    """The Arrow schema of FIELDS."""
    import pyarrow as pa

    scalar = {"string": pa.string(), "int32": pa.int32(), "float32": pa.float32(), "float64": pa.float64(),
              "bool": pa.bool_()}

    def arrow(t: str) -> pa.DataType:
        return pa.list_(scalar[t[5:-1]]) if t.startswith("list<") else scalar[t]

    return pa.schema([pa.field(name, arrow(t), nullable=nullable) for name, t, nullable in FIELDS])


def __getattr__(name: str) -> Any:
    if name == "TRANSITION_SCHEMA":  # `from spanrl.transitions.schema import TRANSITION_SCHEMA` still works
        return transition_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def conform(table: pa.Table) -> pa.Table:
    """Reorder and cast ``table`` to the schema; raise ValueError naming missing/extra columns."""
    missing = [c for c in COLUMNS if c not in table.column_names]
    extra = [c for c in table.column_names if c not in COLUMNS]
    if missing or extra:
        raise ValueError(
            f"transition table does not match schema v{SCHEMA_VERSION}: "
            f"missing {missing or 'none'}, unexpected {extra or 'none'}"
        )
    return table.select(COLUMNS).cast(transition_schema())
