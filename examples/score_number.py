"""A scorer for ``spanrl rollout --score``, shared by the framework examples: 1.0 when the last number in
the agent's output equals the task's ``expected``, else 0.0. Reads ``{"task": ..., "output": ...}`` on stdin."""

import json
import re
import sys

doc = json.load(sys.stdin)
found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", doc.get("output") or "")
try:
    correct = bool(found) and abs(float(found[-1].replace(",", "")) - float(doc["task"]["expected"])) < 1e-6
except (KeyError, TypeError, ValueError):
    correct = False
print(1.0 if correct else 0.0)
