"""The transition snapshot schema: the one contract between ingest and trainer (docs/transitions.md).

Bump ``SCHEMA_VERSION`` on any change a reader would notice (a column added, removed, renamed or
retyped); readers refuse snapshots of another version with a message that says how to rebuild.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 2

TRANSITION_SCHEMA = pa.schema(
    [
        pa.field("snapshot_id", pa.string(), nullable=False),
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string()),
        pa.field("trace_id", pa.string()),
        pa.field("span_id", pa.string()),
        pa.field("step", pa.int32(), nullable=False),  # 0..n_steps-1, span-tree then start-time order
        pa.field("n_steps", pa.int32(), nullable=False),
        pa.field("agent_name", pa.string()),
        pa.field("model", pa.string()),
        pa.field("prompt_messages", pa.string()),  # JSON list of OpenAI chat messages (the state)
        pa.field("tools", pa.string()),  # JSON list of OpenAI tool definitions, or NULL
        pa.field("response_message", pa.string()),  # JSON OpenAI assistant message (the action)
        pa.field("prompt_token_ids", pa.list_(pa.int32())),  # exact engine ids when known
        pa.field("response_token_ids", pa.list_(pa.int32())),
        pa.field("response_logprobs", pa.list_(pa.float32())),  # behaviour policy log-probs
        pa.field("token_source", pa.string()),  # 'engine' (ids above) | 'text' (re-tokenise)
        pa.field("temperature", pa.float64()),
        pa.field("final_reward", pa.float64()),  # the rollout's primary reward
        pa.field("step_reward", pa.float64()),  # AIR reward attached to this call
        pa.field("return", pa.float64()),  # credit-assigned return of this call
        pa.field("advantage", pa.float64()),
        pa.field("is_last", pa.bool_()),
        pa.field("source_files", pa.list_(pa.string())),
    ]
)

COLUMNS = TRANSITION_SCHEMA.names


def conform(table: pa.Table) -> pa.Table:
    """Reorder and cast ``table`` to the schema; raise ValueError naming missing/extra columns."""
    missing = [c for c in COLUMNS if c not in table.column_names]
    extra = [c for c in table.column_names if c not in COLUMNS]
    if missing or extra:
        raise ValueError(
            f"transition table does not match schema v{SCHEMA_VERSION}: "
            f"missing {missing or 'none'}, unexpected {extra or 'none'}"
        )
    return table.select(COLUMNS).cast(TRANSITION_SCHEMA)
