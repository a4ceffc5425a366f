"""bench/demo_seeds: the demo's evidence runs, N seeds x the ablation arms, resumable, then the table and plot.

Each (arm, seed) is one ``spanrl demo --method ARM --seed SEED --cycles C`` in its own data root
``ROOT/<arm>-s<seed>``; a run stopped at any point continues where it stopped (the demo records
each finished cycle in ``demo/cycles.jsonl`` and skips phases whose files are whole). A finished run
appends one line to ``ROOT/results.jsonl`` (held-out reward per cycle, on all 64 tasks at cycle 0
and after the last cycle and on the fixed first 16 at every cycle; validation, gate decisions,
tool-error rate, AIR hits, wall time), and the script renders ``ROOT/seeds.md`` (mean ± sample std
over seeds) and ``ROOT/seeds.png`` (error bars). Arms (``spanrl.demo.config.METHODS``):

    rl             pg, air credit (AIR reaches the advantage), group advantage
    rl-no-air      pg, identical credit (AIR recorded, not trained on)
    rl-discounted  pg, discounted credit (gamma 0.95, AIR reward-to-go)
    sft            expert iteration on the best correct rollout per task (the demo's default)

    .venv/bin/python bench/demo_seeds.py --root ./seeds                    # 3 seeds x 4 arms x 5 cycles
    .venv/bin/python bench/demo_seeds.py --root ./seeds --arms rl,sft --seeds 0
    .venv/bin/python bench/demo_seeds.py --root ./seeds --render-only      # table + plot from results.jsonl
    .venv/bin/python bench/demo_seeds.py --root /tmp/s --quick --arms rl --seeds 0   # plumbing check

Not part of the default tests: one arm-seed is a full demo (about 30 minutes on 2 CPU cores).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ARMS = ("rl", "rl-no-air", "rl-discounted", "sft")


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def trained_cycles(data: Path) -> tuple[int, bool]:
    """(training cycles recorded, whether the final held-out evaluation is recorded too)."""
    record = read_jsonl(data / "demo" / "cycles.jsonl")
    trained = sum(1 for r in record if "train" in (r.get("seconds") or {}))
    final = bool(record) and "train" not in (record[-1].get("seconds") or {})
    return trained, final


def run_arm(arm: str, seed: int, cycles: int, data: Path, extra: list[str]) -> float:
    """Run (or finish) one demo; returns the wall seconds of this call."""
    done, final = trained_cycles(data)
    if done >= cycles and final:
        return 0.0
    cmd = [sys.executable, "-m", "spanrl", "demo", "--data", str(data), "--method", arm, "--seed", str(seed),
           "--cycles", str(max(cycles - done, 0)), *extra]
    print(f"[{arm} seed {seed}] {done}/{cycles} cycles recorded; running: {' '.join(cmd[2:])}", flush=True)
    started = time.monotonic()
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "demo_seeds.log", "ab") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"[{arm} seed {seed}] spanrl demo exited with {code}; see {data / 'demo_seeds.log'} "
                         "(re-run this script to resume)")
    return time.monotonic() - started


def summarise(arm: str, seed: int, data: Path, wall_s: float) -> dict:
    """One results line from the run's files (spanrl.demo.report.load_history)."""
    from spanrl.demo.report import load_history

    rows = load_history(data)
    record = read_jsonl(data / "demo" / "cycles.jsonl")
    spent = sum(sum((r.get("seconds") or {}).values()) for r in record)
    return {
        "arm": arm, "seed": seed, "cycles": len(rows) - 1, "data": str(data),
        "held_out": {r["cycle"]: r["eval_reward"] for r in rows},
        "held_out_n": {r["cycle"]: r["eval_n"] for r in rows},
        "held_out_first16": {r["cycle"]: r["eval_subset_reward"] for r in rows},
        "val": {r["cycle"]: r["val_reward"] for r in rows},
        "gate": {r["cycle"]: r["gate"] for r in rows},
        "tool_error_rate": {r["cycle"]: r["tool_error_rate"] for r in rows},
        "air_hits": {r["cycle"]: r["air_hits"] for r in rows},
        "seconds_recorded": round(spent, 1), "wall_s_last_call": round(wall_s, 1), "finished_at": time.time(),
    }


def mean_sd(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else float("nan")
    return mean, sd


def render(results: list[dict], out: Path) -> None:
    """seeds.md (per arm: held-out per cycle mean ± sd, gain of the last cycle over cycle 0) and seeds.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [a for a in ARMS if any(r["arm"] == a for r in results)]
    lines = ["| arm | seeds | held-out cycle 0 (all tasks) | held-out last (all tasks) | gain last - 0 | first-16 per cycle | "
             "tool err rate per cycle | promoted |", "|---|---|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.5))
    for arm in arms:
        runs = [r for r in results if r["arm"] == arm]
        last = min(int(r["cycles"]) for r in runs)
        first = mean_sd([r["held_out"]["0"] for r in runs])
        end = mean_sd([r["held_out"][str(last)] for r in runs])
        gain = mean_sd([r["held_out"][str(last)] - r["held_out"]["0"] for r in runs])
        sub = [mean_sd([r["held_out_first16"][str(c)] for r in runs]) for c in range(last + 1)]
        err = [mean_sd([r["tool_error_rate"][str(c)] for r in runs if r["tool_error_rate"].get(str(c)) is not None]
                       or [float("nan")]) for c in range(last)]
        promoted = sum(1 for r in runs for g in r["gate"].values() if g == "promoted")
        trained = sum(1 for r in runs for g in r["gate"].values() if g)
        lines.append(f"| {arm} | {len(runs)} | {first[0]:.3f} ± {first[1]:.3f} | {end[0]:.3f} ± {end[1]:.3f} | "
                     f"**{gain[0]:+.3f} ± {gain[1]:.3f}** | " + " ".join(f"{m:.2f}" for m, _ in sub)
                     + " | " + " ".join(f"{m:.2f}" for m, _ in err) + f" | {promoted}/{trained} |")
        x = list(range(last + 1))
        axes[0].errorbar([0, last], [first[0], end[0]], yerr=[first[1], end[1]], fmt="o-", capsize=4, label=arm)
        axes[1].errorbar(x, [m for m, _ in sub], yerr=[s for _, s in sub], fmt="s-", capsize=3, label=arm)
        axes[2].errorbar(x[:-1], [m for m, _ in err], yerr=[s for _, s in err], fmt="^-", capsize=3, label=arm)
    axes[0].set(title="held-out reward, all 64 tasks (mean ± sd over seeds)", xlabel="cycle", ylabel="reward")
    axes[1].set(title="held-out reward, fixed first 16 tasks, every cycle", xlabel="cycle", ylabel="reward")
    axes[2].set(title="tool-error rate of the training rollouts", xlabel="cycle", ylabel="failed / all tool calls")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "seeds.png", dpi=100)
    plt.close(fig)
    (out / "seeds.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {out / 'seeds.md'} and {out / 'seeds.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("spanrl-seeds"), help="one data root per arm and seed under here")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--model", type=Path, default=None, help="base model folder (default: the demo model)")
    ap.add_argument("--quick", action="store_true", help="pass --quick to every demo (a plumbing check, not evidence)")
    ap.add_argument("--render-only", action="store_true", help="only the table and plot from results.jsonl")
    a = ap.parse_args()
    a.root.mkdir(parents=True, exist_ok=True)
    results_file = a.root / "results.jsonl"
    if not a.render_only:
        extra = (["--model", str(a.model.resolve())] if a.model else []) + (["--quick"] if a.quick else [])
        for seed in [int(s) for s in a.seeds.split(",")]:
            for arm in a.arms.split(","):
                if arm not in ARMS:
                    raise SystemExit(f"--arms: {arm!r} is not one of {', '.join(ARMS)}")
                if any(r["arm"] == arm and r["seed"] == seed for r in read_jsonl(results_file)):
                    continue
                data = (a.root / f"{arm}-s{seed}").resolve()
                wall = run_arm(arm, seed, 1 if a.quick else a.cycles, data, extra)
                with open(results_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(summarise(arm, seed, data, wall), sort_keys=True) + "\n")
    results = json.loads(json.dumps(read_jsonl(results_file)))  # cycle keys are strings after a round trip
    if results:
        render(results, a.root)


if __name__ == "__main__":
    main()
