"""Promotion on evidence: read ``spanrl eval``'s eval.json and say whether a candidate may be promoted.

Lives in the trainer (which ``spanrl adapters promote`` belongs to); ``spanrl eval`` writes the
verdicts this reads. A candidate is promoted only on a "better" verdict against the baseline; a
worse, an undecided or a missing comparison refuses, naming the verdict and the interval.
"""

from __future__ import annotations

import json
from pathlib import Path

from spanrl.errors import InputError

BETTER = "better"


def comparison_for(eval_json: Path, candidate: str) -> dict:
    """The comparison of eval.json whose candidate is ``candidate`` (an adapter id, or the policy as given)."""
    try:
        doc = json.loads(Path(eval_json).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"--if-better {eval_json}: cannot read it ({exc}); pass the eval.json `spanrl eval` wrote") from exc
    comps = doc.get("comparisons") or []
    found = [c for c in comps if c.get("candidate") == candidate]
    if not found:
        names = ", ".join(str(c.get("candidate")) for c in comps) or "none"
        raise InputError(f"--if-better {eval_json}: no comparison for {candidate!r} (candidates: {names}); "
                         f"evaluate it with `spanrl eval --policy BASELINE_URL --policy {candidate}=ITS_URL`")
    return found[0]


def check_better(eval_json: Path, candidate: str) -> dict:
    """The comparison when its verdict is "better"; otherwise InputError naming verdict and interval."""
    comp = comparison_for(eval_json, candidate)
    if comp.get("verdict") != BETTER:
        lo, hi = (comp.get("ci") or [None, None])[:2]
        raise InputError(f"not promoting {candidate}: the verdict against {comp.get('baseline')} is "
                         f"{comp.get('verdict')!r} (difference {comp.get('diff')}, "
                         f"{comp.get('level')} interval [{lo}, {hi}]); LATEST is unchanged")
    return comp
