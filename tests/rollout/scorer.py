"""A scorer for ``spanrl rollout --score``: 1.0 when the task's ``expected`` is in the agent's output,
else 0.0; a task marked ``"scorer_fails": true`` makes it print text instead of a number."""

import json
import sys

doc = json.load(sys.stdin)
if doc["task"].get("scorer_fails"):
    print("no idea")
else:
    print(1.0 if doc["task"].get("expected", "") in doc["output"] else 0.0)
