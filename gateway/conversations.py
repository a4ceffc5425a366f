"""The conversations behind the Responses API's ``previous_response_id``, so a chained step's span
records its whole prompt, not just the items the agent sent this time.

With ``previous_response_id`` the upstream keeps the conversation (server-side state) and the agent
sends only the new items. The gateway saw every earlier step it served, so it remembers, per
response id, that step's own new messages and the id it continued: a prompt is rebuilt by walking
back to the first step. Memory is bounded (``max_bytes`` of message JSON, oldest forgotten first);
a chain whose link is unknown (served before a restart, by another gateway, or forgotten) gives
None: the caller marks the span and counts it, it never records the partial prompt as the whole.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

MAX_DEPTH = 100_000  # a chain longer than this is treated as unknown (and a cycle cannot loop)


class Conversations:
    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.forgotten = 0
        self._steps: OrderedDict[str, tuple[str | None, list[dict[str, Any]], int]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, response_id: str, previous_id: str | None, messages: list[dict[str, Any]]) -> None:
        """Step ``response_id`` continued ``previous_id`` (None: it started the conversation) with
        ``messages`` (its new input, then its output)."""
        size = len(json.dumps(messages, ensure_ascii=False)) + len(response_id) + 64
        with self._lock:
            old = self._steps.pop(response_id, None)
            if old is not None:
                self.size -= old[2]
            self._steps[response_id] = (previous_id, messages, size)
            self.size += size
            while self.size > self.max_bytes and len(self._steps) > 1:
                _, (_, _, dropped) = self._steps.popitem(last=False)
                self.size -= dropped
                self.forgotten += 1

    def recall(self, response_id: str) -> list[dict[str, Any]] | None:
        """The whole conversation up to and including step ``response_id``; None when any step of it
        is unknown."""
        parts: list[list[dict[str, Any]]] = []
        current: str | None = response_id
        with self._lock:
            while current is not None:
                step = self._steps.get(current)
                if step is None or len(parts) >= MAX_DEPTH:
                    return None
                self._steps.move_to_end(current)  # used: forgotten last
                parts.append(step[1])
                current = step[0]
        return [m for part in reversed(parts) for m in part]

    def __len__(self) -> int:
        return len(self._steps)
