"""spanrl: OpenTelemetry traces of AI agents -> RL transitions -> LoRA adapters.

Stages (one folder each, data flows one way, crossing stages only as files):
``spanrl.collector`` -> span files -> ``spanrl.ingest`` -> trace lake + transition snapshots
-> ``spanrl.trainer`` -> LoRA adapters. ``spanrl.transitions`` is the snapshot contract.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__", "emit_reward"]


def emit_reward(value: float, name: str | None = None, **attributes: object) -> None:
    """Record a reward for the current agent run, using only the OpenTelemetry API.

    It creates a tiny ``spanrl.reward`` span as a child of whatever span is current, so the
    ingest attaches it to the right rollout without the agent importing anything else of ours.
    """
    from opentelemetry import trace

    attrs: dict[str, object] = {"spanrl.reward": float(value), **attributes}
    if name:
        attrs["spanrl.reward.name"] = name
    with trace.get_tracer("spanrl").start_as_current_span("spanrl.reward", attributes=attrs):
        pass
