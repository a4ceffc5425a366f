"""No CREATE outside stage 2's steps: every relation ``transitions/`` creates comes from a Step of
``pipeline.STEP_LISTS``, run by ``run_steps`` (issue 46), but for the exceptions below, each with its
reason. A step file is a body (its Step names what it creates): a CREATE in any SQL file is one of them.
An exception that no longer occurs fails too, so the list only shrinks."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "transitions"
CREATE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                    r"([\w{}.]+)", re.IGNORECASE)
CALL = re.compile(r"(?<![\w.])create\(\s*con\s*,\s*([^,]+),")  # pipeline.create(con, name, kind, body)

# "file (under transitions/): relation as written there" -> why it is not (yet) a step.
EXCEPTIONS = {
    "pipeline.py: step.creates": "the runner itself: every step's CREATE",
    "air.py: _air_rules": "the [air] rules bound as rows (values, never SQL) by the _air_rule_hits step's generator",
    "air.py: _air_probe": "an empty _air_candidates to test one user rule at a time and name the bad one",
    "feedback.py: _feedback_raw": "the feedback files, one INSERT per file and format: the steps' input _feedback",
    "feedback.py: _feedback": "the steps' input: the normalised feedback rows (stage 2's STAGE1-like input)",
    "quarantine.py: _q_traces": "quarantine: the traces a probe by halves keeps or leaves out",
    "quarantine.py: _quarantine": "quarantine: the table of quarantined traces written with the build",
    "rollouts.py: {name}": "the _prior_* inputs, empty, when no incremental plan filled them (a full build, spanrl sql)",
    "rollouts.py: _span_facts": "stage 1's span facts as a view on a query connection (ingest's SQL, not stage 2's)",
    "rollouts.py: name": "stage 1's span facts, llm_calls, tool_calls materialised (ingest's SQL, not stage 2's)",
    "shards.py: _trace_keys": "the sharded plan: keys that tie traces together",
    "shards.py: _components": "the sharded plan: label propagation, a loop until no label changes",
    "shards.py: _components_next": "the sharded plan: label propagation, a loop until no label changes",
    "shards.py: _touched": "the sharded plan: a full build's worker's traces (bound from the driver's plan)",
    "shards.py: _seeds": "the sharded plan: an incremental night's whole set, bound from the driver's (closed) plan",
    "shards.py: _span_tree": "sharded feedback: the shards' rollouts in the shape _feedback_rewards reads",
    "shards.py: _trace_rollouts": "sharded feedback: the shards' trace rollouts in the shape _feedback_rewards reads",
    "shards.py: _rollout_calls": "sharded feedback: the shards' response ids in the shape _feedback_rewards reads",
    "shards.py: {name}": "sharded feedback: the _prior_* inputs, empty",
    "snapshot.py: _hash_digests": "content_hash's inputs over any relation or table function (a draft's files)",
    "snapshot.py: _hash_advantages": "content_hash's inputs over any relation or table function (a draft's files)",
    "snapshot.py: transition_rows": "a reader's view of a snapshot's parts (DIGEST_STEPS reads it)",
    "snapshot.py: {name}_adv": "register_snapshot: a reader's lazy views on a query connection",
    "snapshot.py: {name}": "register_snapshot: a reader's lazy views on a query connection",
    "snapshot.py: _rollout_adv": "a reader's stored advantages (advantages.parquet) for the credit SQL",
}


def _creates() -> set[str]:
    """Every "file: relation" a CREATE names in transitions/*.py and transitions/sql/ (comments left out)."""
    found = set()
    for f in sorted([*ROOT.glob("*.py"), *ROOT.glob("sql/**/*.sql")]):
        text = f.read_text()
        if f.suffix == ".sql":
            text = "\n".join(line.split("--")[0] for line in text.splitlines())
        names = [m[1] for m in CREATE.finditer(text)]
        if f.suffix == ".py":
            names += [m[1].strip().strip('"') for m in CALL.finditer(text)]
        found |= {f"{f.relative_to(ROOT)}: {n}" for n in names}
    return found


def test_no_create_outside_the_steps() -> None:
    stray = sorted(_creates() - set(EXCEPTIONS))
    assert not stray, ("a CREATE outside pipeline.py's steps: make it a Step (its file a body with '-- reads:' / "
                       f"'-- creates:'), or list it in EXCEPTIONS with the reason: {stray}")


def test_every_exception_still_occurs() -> None:
    gone = sorted(set(EXCEPTIONS) - _creates())
    assert not gone, f"no longer created there: drop from EXCEPTIONS {gone}"
    assert all(reason.strip() for reason in EXCEPTIONS.values())
