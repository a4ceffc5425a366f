"""report.png of one training cycle: loss per step, and mean snapshot reward per cycle so far."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_cycle_report(path: Path, metrics: list[dict[str, Any]], cycles: list[dict[str, Any]], title: str) -> None:
    """Two panels (matplotlib Agg, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (ax_loss, ax_reward) = plt.subplots(1, 2, figsize=(10, 3.6))
    steps = [m["step"] for m in metrics]
    ax_loss.plot(steps, [m["loss"] for m in metrics], marker="o", ms=3, label="loss")
    if any("kl" in m for m in metrics):
        ax_loss.plot(steps, [m.get("kl", 0.0) for m in metrics], ls="--", label="KL")
    undone = [m for m in metrics if m.get("rolled_back")]
    if undone:  # steps the update guard rolled back (--max-kl)
        ax_loss.plot([m["step"] for m in undone], [m["loss"] for m in undone], "rx", label="rolled back")
    ax_loss.set_xlabel("step")
    ax_loss.set_title("training loss")
    ax_loss.legend()
    xs = [c.get("cycle", i + 1) for i, c in enumerate(cycles)]
    ax_reward.plot(xs, [c.get("mean_final_reward") for c in cycles], marker="o")
    ax_reward.set_xlabel("cycle")
    ax_reward.set_title("mean final reward of the snapshot (per rollout)")
    for ax in (ax_loss, ax_reward):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
