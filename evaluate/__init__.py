"""``spanrl eval``: compare policies on the same tasks with paired bootstrap intervals and a verdict."""
