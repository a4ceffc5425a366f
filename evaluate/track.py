"""``spanrl eval --report-to``: an evaluation's numbers in the experiment trackers ``spanrl train`` uses.

With one candidate that is an adapter id, MLflow adds them to that adapter's training run (its tag
``cycle_id``), so the cycle's run shows its held-out result beside its losses; otherwise, and for
TensorBoard and W&B, they form a run of their own named ``eval-<candidates>``. Metric names are the
policy names with characters trackers refuse replaced; eval.json and report.png go as artifacts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spanrl.trainer.tracking import Tracker, open_trackers


def _key(name: str) -> str:
    return re.sub(r"[^\w\-. /]", "_", name)


def open_eval_trackers(report_to: str, data: Path, names: list[str]) -> list[Tracker]:
    """Before the agents run, so a missing tracker library fails at once."""
    candidates = names[1:]
    attach = candidates[0] if len(candidates) == 1 else None
    return open_trackers(report_to, data, _key("eval-" + "-".join(candidates or names))[:100], attach, "eval")


def log_eval(trackers: list[Tracker], doc: dict[str, Any], out: Path) -> None:
    """Params (what was evaluated), per-policy means and per-pair differences, verdicts as tags."""
    cfg, policies, comps = doc["config"], doc["policies"], doc["comparisons"]
    params = {f"eval.{k}": cfg[k] for k in ("tasks", "n", "level", "baseline", "score", "judge_model") if k in cfg}
    params["eval.policies"] = ",".join(policies)
    summary: dict[str, float] = {}
    for name, p in policies.items():
        summary[f"eval/{_key(name)}/mean"] = p["mean"]
    tags: dict[str, str] = {}
    for c in comps:
        pair = f"eval/{_key(c['candidate'])}_vs_{_key(c['baseline'])}"
        summary[f"{pair}/diff"], summary[f"{pair}/ci_low"], summary[f"{pair}/ci_high"] = c["diff"], *c["ci"][:2]
        tags[f"eval.verdict.{_key(c['candidate'])}"] = c["verdict"]
    for t in trackers:
        t.start(params)
        t.finish(out, summary, tags)
