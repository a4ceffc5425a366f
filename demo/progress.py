"""Progress that everyone sees: rich's live bars in a terminal, plain lines in a pipe or a log file.

A rich ``Progress`` draws nothing until it stops when its console is not a terminal, so a demo sent
to a file said one line and then nothing for 13 minutes (issue 31). ``LineProgress`` has the part of
``Progress``'s interface the demo uses and prints one line when a step starts, at each quarter of a
counted step, and when it ends: counts and elapsed seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Any


class LineProgress:
    """``add_task`` / ``update`` / ``advance`` as rich's, printed as lines (thread-safe)."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._tasks: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def add_task(self, description: str, total: float | None = None, **_: Any) -> int:
        with self._lock:
            task_id = len(self._tasks)
            self._tasks[task_id] = {"description": description, "total": total, "completed": 0,
                                    "started": time.monotonic(), "said": 0, "done": False}
        self._say(f"{description}: started" + (f" ({total:g} to do)" if total else ""))
        return task_id

    def update(self, task_id: int, *, total: float | None = None, completed: float | None = None,
               advance: float | None = None, **_: Any) -> None:
        with self._lock:
            task = self._tasks[task_id]
            planned = None
            if total is not None:
                if not task["total"] and total:  # the count arrives after the start (the runner's plan)
                    planned = f"{task['description']}: {total:g} to do"
                task["total"] = total
            if completed is not None:
                task["completed"] = completed
            if advance is not None:
                task["completed"] += advance
            line = self._line(task)
        for text in (planned, line):
            if text:
                self._say(text)

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    @staticmethod
    def _line(task: dict[str, Any]) -> str | None:
        """The line to print now, if any: when the step ends, or at a new quarter of a counted one."""
        total, done = task["total"], task["completed"]
        if not total or task["done"]:
            return None
        elapsed = time.monotonic() - task["started"]
        if done >= total:
            task["done"] = True
            return f"{task['description']}: done, {done:g}/{total:g} in {elapsed:.0f}s"
        quarter = int(4 * done / total)
        if total >= 4 and quarter > task["said"]:
            task["said"] = quarter
            return f"{task['description']}: {done:g}/{total:g} after {elapsed:.0f}s"
        return None
