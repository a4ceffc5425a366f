"""_feedback_rewards (transitions/sql/rewards/_feedback_rewards.sql) on a night without feedback: the table as
the step creates it now (each lookup semi-joined to the feedback rows first) against the statement of
b5d3c5a (the lookups over every span, rollout and call, then joined to no feedback row), alternating."""

import subprocess
from pathlib import Path

BEFORE = "-- name: _feedback_rewards"
_OLD = subprocess.run(["git", "show", "b5d3c5a:transitions/sql/rewards/_feedback_rewards.sql"], capture_output=True,
                      text=True, check=True, cwd=Path(__file__).resolve().parents[2]).stdout
VARIANTS = {
    "now": lambda q: f"CREATE OR REPLACE TEMP TABLE _pieces_now AS {q}",
    "before (lookups over everything)": f"CREATE OR REPLACE TEMP TABLE _pieces_before AS {_OLD}",
    "now ": lambda q: f"CREATE OR REPLACE TEMP TABLE _pieces_now AS {q}",
    "before (lookups over everything) ": f"CREATE OR REPLACE TEMP TABLE _pieces_before AS {_OLD}",
}
