"""What each demo cycle gave the optimizer to learn from: the measurements behind docs/demo.md's ablation.

    .venv/bin/python bench/demo_signal.py --root ./seeds       # after bench/demo_seeds.py

For every run of ``ROOT/results.jsonl`` (bench/demo_seeds.py) and every cycle it trained, reads the
snapshot that cycle trained on (``adapters/cycles.jsonl`` names it) and counts, per arm over seeds
and cycles: rollouts, task groups, groups whose rewards differ (the only ones a group advantage can
learn from), transition rows, rows with a non-zero advantage, and rows whose non-zero advantage
comes from AIR alone (a group with equal rewards, where ``air`` credit still pushes down the calls
that broke a tool). Also the positive and negative advantage mass. Writes ``ROOT/signal.md``.
Reads snapshot files only (schema 1 parts directly; newer snapshots through
``spanrl.transitions.snapshot.register_snapshot``), so it can run beside a demo. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from spanrl.transitions.snapshot import register_snapshot  # noqa: E402

ROW_COLUMNS = ("rollout_id, task_id, step, coalesce(final_reward, 0.0) AS r, coalesce(step_reward, 0.0) AS air, "
               "advantage")

STATS = """
WITH g AS (SELECT task_id, count(DISTINCT rollout_id) AS n, max(r) - min(r) AS spread FROM x GROUP BY task_id)
SELECT count(DISTINCT rollout_id) AS rollouts,
       (SELECT count(*) FROM g) AS groups,
       (SELECT count(*) FROM g WHERE spread > 1e-9) AS groups_with_spread,
       count(*) AS rows,
       count(*) FILTER (WHERE abs(advantage) > 1e-9) AS rows_with_signal,
       count(*) FILTER (WHERE abs(advantage) > 1e-9 AND task_id IN (SELECT task_id FROM g WHERE spread <= 1e-9))
           AS rows_air_only,
       count(*) FILTER (WHERE air <> 0) AS rows_air_hit,
       coalesce(sum(advantage) FILTER (WHERE advantage > 0), 0) AS pos_mass,
       coalesce(-sum(advantage) FILTER (WHERE advantage < 0), 0) AS neg_mass,
       count(DISTINCT rollout_id) FILTER (WHERE r >= 1.0) AS solved,
       count(*) / count(DISTINCT rollout_id) AS calls_per_rollout
FROM x
"""


def cycle_rows(con: duckdb.DuckDBPyConnection, run: Path, snapshot_id: str) -> None:
    """Temp table x of one snapshot's rows with their advantages. A schema-1 snapshot (the frozen
    runner's) holds them in its parts; a newer one is read through the project's own reader, which
    applies the snapshot's credit to its advantages table."""
    folder = run / "transitions" / snapshot_id
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("schema_version", 1) == 1:
        con.execute(f"CREATE OR REPLACE TEMP TABLE x AS SELECT {ROW_COLUMNS} FROM read_parquet($parts)",
                    {"parts": [str(folder / p) for p in manifest["parts"]]})
    else:
        register_snapshot(con, run, snapshot_id, "snap")
        con.execute(f"CREATE OR REPLACE TEMP TABLE x AS SELECT {ROW_COLUMNS} FROM snap")


def run_stats(run: Path) -> list[dict]:
    con = duckdb.connect()
    out = []
    cycles = run / "adapters" / "cycles.jsonl"
    if not cycles.exists():
        return out
    for line in cycles.read_text().splitlines():
        if not line.strip():
            continue
        c = json.loads(line)
        if not (run / "transitions" / c["snapshot_id"] / "manifest.json").exists():
            continue
        cycle_rows(con, run, c["snapshot_id"])
        cur = con.execute(STATS)
        out.append({"cycle": c["cycle"], **dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))})
    return out


def render(by_arm: dict[str, list[dict]]) -> str:
    keys = ["rollouts", "groups", "groups_with_spread", "rows", "rows_with_signal", "rows_air_only",
            "rows_air_hit", "pos_mass", "neg_mass", "solved"]
    lines = ["| arm | runs | rollouts | groups with a reward spread | rows | rows with a non-zero advantage "
             "| of which AIR only | rows with an AIR hit | advantage mass + / − | solved rollouts "
             "| calls per rollout, first → last trained cycle (2 = the tool was used) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for arm, runs in by_arm.items():
        tot = {k: sum(c[k] for run in runs for c in run) for k in keys}
        signal = tot["rows_with_signal"]
        lines.append(
            f"| {arm} | {len(runs)} | {tot['rollouts']} | {tot['groups_with_spread']} / {tot['groups']} "
            f"({tot['groups_with_spread'] / max(tot['groups'], 1):.0%}) | {tot['rows']} | {signal} "
            f"({signal / max(tot['rows'], 1):.0%}) | {tot['rows_air_only']} ({tot['rows_air_only'] / max(signal, 1):.0%} "
            f"of the signal) | {tot['rows_air_hit']} | {tot['pos_mass']:.1f} / {tot['neg_mass']:.1f} | "
            f"{tot['solved']} ({tot['solved'] / max(tot['rollouts'], 1):.0%}) | "
            f"{sum(run[0]['calls_per_rollout'] for run in runs if run) / max(len(runs), 1):.2f} → "
            f"{sum(run[-1]['calls_per_rollout'] for run in runs if run) / max(len(runs), 1):.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="bench/demo_seeds.py's --root")
    a = ap.parse_args()
    by_arm: dict[str, list[list[dict]]] = {}
    for line in (a.root / "results.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            by_arm.setdefault(r["arm"], []).append(run_stats(Path(r["data"])))
    text = render(by_arm)
    (a.root / "signal.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
