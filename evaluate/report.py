"""``spanrl eval``'s outputs besides eval.json: the stdout table and ``report.png``."""

from __future__ import annotations

from pathlib import Path


def print_table(doc: dict, console) -> None:  # noqa: ANN001 - a rich Console
    """Per policy mean and interval, per comparison the paired difference and verdict."""
    from rich.table import Table

    level = doc["config"]["level"]
    t = Table(title=f"spanrl eval ({level:.0%} intervals, tasks resampled)")
    for col in ("policy", "tasks", "samples", "mean reward", "interval", "vs baseline", "verdict"):
        t.add_column(col, overflow="fold")
    comps = {c["candidate"]: c for c in doc["comparisons"]}
    for name, p in doc["policies"].items():
        c = comps.get(name)
        t.add_row(name, str(p["tasks"]), str(p["samples"]), f"{p['mean']:.3f}", f"[{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]",
                  f"{c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c else "baseline",
                  c["verdict"] if c else "")
    console.print(t)


def write_png(doc: dict, path: Path) -> Path:
    """Per-task mean rewards as dots per policy, with each policy's mean and interval as a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(doc["policies"])
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(names) + 2), 4))
    for i, name in enumerate(names):
        p = doc["policies"][name]
        means = [sum(v) / len(v) for v in p["rewards"].values() if v]
        ax.scatter([i + 0.08 * ((k % 5) - 2) for k in range(len(means))], means, alpha=0.5, s=18)
        ax.errorbar([i], [p["mean"]], yerr=[[p["mean"] - p["ci"][0]], [p["ci"][1] - p["mean"]]], fmt="o",
                    color="black", capsize=6)
    ax.set_xticks(range(len(names)), [n if len(n) < 28 else "…" + n[-26:] for n in names], fontsize=7)
    ax.set_ylabel("reward (per task: mean of its samples)")
    verdicts = "; ".join(f"{c['verdict']} ({c['diff']:+.3f})" for c in doc["comparisons"])
    ax.set_title(f"vs {names[0][-30:]}: {verdicts}" if verdicts else "spanrl eval", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
