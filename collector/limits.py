"""Back-pressure as a pure check, plus the small counter that feeds it.

The queue between the network and the writer thread is bounded by request count and by request bytes,
so memory stays bounded whatever the senders do. A refused request is retryable (429 / UNAVAILABLE):
OTLP exporters back off and send it again, so nothing is lost.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueLimits:
    max_items: int
    max_bytes: int


def admit(queued_items: int, queued_bytes: int, size: int, limits: QueueLimits) -> bool:
    """True when a request of ``size`` bytes may join the queue.

    An empty queue always admits one request (even one bigger than ``max_bytes``; the body limit
    bounds it), so a single large batch can never be refused forever.
    """
    if queued_items == 0:
        return True
    return queued_items < limits.max_items and queued_bytes + size <= limits.max_bytes


class QueueBudget:
    """Thread-safe counts of what is queued; ``try_take`` applies ``admit`` atomically."""

    def __init__(self, limits: QueueLimits) -> None:
        self.limits = limits
        self.items = 0
        self.bytes = 0
        self._lock = threading.Lock()

    def try_take(self, size: int) -> bool:
        with self._lock:
            if not admit(self.items, self.bytes, size, self.limits):
                return False
            self.items += 1
            self.bytes += size
            return True

    def would_admit(self, size: int) -> bool:
        """A cheap early look (before reading a body); ``try_take`` still decides."""
        return admit(self.items, self.bytes, size, self.limits)

    def release(self, size: int) -> None:
        with self._lock:
            self.items -= 1
            self.bytes -= size
