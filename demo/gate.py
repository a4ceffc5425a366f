"""The demo's promotion gate: the same evidence as ``spanrl adapters promote --if-better``.

The policy and the candidate run the same validation tasks; their paired difference, its bootstrap
interval and verdict come from ``spanrl eval``'s statistics (``spanrl.evaluate.stats.compare``) and
are written as an eval.json-shaped file (``DATA/eval/gate-<cycle>.json``), which
``spanrl.trainer.evidence.check_better`` reads exactly as ``--if-better`` does. So a demo that says
"promoted (better)" would also pass ``spanrl adapters promote --if-better DATA/eval/gate-N.json``.

"better": promoted. "worse": kept as a candidate. "no detectable difference": with
``promote="better"`` (the --quick preset) kept ("kept (no difference)", issue 31: the quick demo
used to print "promoted" at 0.000 vs 0.000); with ``promote="margin"`` (the full demo, whose
documented learning curves need the policy to move on), promoted unless the candidate's mean is
lower by more than the margin (``spanrl.trainer.adapter.passes_gate``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanrl.errors import InputError
from spanrl.evaluate.stats import NO_DIFFERENCE, WORSE, compare
from spanrl.trainer.adapter import passes_gate
from spanrl.trainer.evidence import check_better, comparison_for

LEVEL, RESAMPLES, SEED = 0.95, 2_000, 0
GATES = ("better", "margin")


@dataclass
class GateDecision:
    """What the gate decided and the words the demo prints for it."""

    promote: bool
    verdict: str  # better / worse / no detectable difference / no comparison
    message: str


def task_rewards(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Task id -> the rewards of its samples (the agent's result lines; unscored samples left out)."""
    out: dict[str, list[float]] = {}
    for row in rows:
        if row.get("reward") is not None and row.get("task_id") is not None:
            out.setdefault(str(row["task_id"]), []).append(float(row["reward"]))
    return out


def _interval(comp: dict[str, Any]) -> str:
    lo, hi = comp["ci"]
    return f"{comp['diff']:+.3f}, {comp['level']:.0%} interval [{lo:+.3f}, {hi:+.3f}] over {comp['tasks']} tasks"


def gate_decision(policy_rows: list[dict[str, Any]], candidate_rows: list[dict[str, Any]], policy: str,
                  candidate: str, out: Path, promote: str = "better", margin: float = 0.1) -> GateDecision:
    """Compare the candidate with the policy on the validation tasks both scored; write ``out``
    (eval.json shape: ``comparisons``) and decide through ``trainer.evidence``."""
    if promote not in GATES:
        raise InputError(f"demo: the gate is one of {', '.join(GATES)}, got {promote!r}")
    base, cand = task_rewards(policy_rows), task_rewards(candidate_rows)
    if not base:  # nothing to protect (the policy was never scored): the loop moves on
        return GateDecision(True, "no comparison", "promoted (the policy has no validation score)")
    try:
        comp = {"baseline": policy, "candidate": candidate, **compare(base, cand, LEVEL, RESAMPLES, SEED)}
    except ValueError:  # no task scored by both
        return GateDecision(False, "no comparison", "kept as a candidate (no validation task scored by both)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": {"level": LEVEL, "resamples": RESAMPLES, "seed": SEED, "baseline": policy},
                               "comparisons": [comp]}, indent=1) + "\n")
    try:
        check_better(out, candidate)  # the --if-better rule, on the file it reads
        return GateDecision(True, comp["verdict"], f"promoted (better: {_interval(comp)})")
    except InputError:
        verdict = comparison_for(out, candidate)["verdict"]
    if verdict == WORSE:
        return GateDecision(False, verdict, f"kept as a candidate (worse: {_interval(comp)})")
    if promote == "margin" and verdict == NO_DIFFERENCE:
        means = sum(sum(v) / len(v) for v in cand.values()) / len(cand), sum(sum(v) / len(v) for v in base.values()) / len(base)
        if passes_gate(means[0], means[1], margin):
            return GateDecision(True, verdict, f"promoted (no detectable difference, within the {margin:g} margin: "
                                               f"{_interval(comp)})")
        return GateDecision(False, verdict, f"kept as a candidate (lower by more than the {margin:g} margin: "
                                            f"{_interval(comp)})")
    return GateDecision(False, verdict, f"kept (no difference: {_interval(comp)})")
