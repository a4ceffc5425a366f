"""Back-pressure: one memory budget that every request draws on, from its first body byte until it is
written, plus a pure check that says who may grow.

Why bytes and not a count of requests in flight: a count lets 32 idle connections that each sent half a
body take every slot (issue 9 item 9), while a byte budget charges them only for what they sent.
Why a multiple of the body: decoding costs more than the body itself (the text, the request message,
the JSON line); ``READ_COST`` and ``queued_cost`` are measured on the worst case (minimal spans) so
the process stays under its bound. A refused request is retryable (429 / UNAVAILABLE): OTLP exporters
back off and send it again, so nothing is lost.
"""

from __future__ import annotations

import itertools
import threading

READ_COST = 4  # budget bytes per decompressed body byte: body + decoded text + request message
ITEM_COST = 200  # budget bytes per span / log record once decoded (message + its JSON on the writer)


def queued_cost(size: int, items: int) -> int:
    """What a decoded request holds until written: the message, then its JSON line (about 2x the body)."""
    return 2 * size + ITEM_COST * items


def admit(total: int, extra: int, max_bytes: int, oldest: bool) -> bool:
    """True when a request may take ``extra`` more bytes while ``total`` are held by all requests.

    The oldest request in flight may always grow, so a request bigger than the budget alone still
    gets through (bounded by the body limit) and two growing requests can never refuse each other
    forever; every other request must fit.
    """
    return oldest or total + extra <= max_bytes


class Reservation:
    """What one request holds in the budget; released once, when the request is answered or written."""

    def __init__(self, budget: MemoryBudget, key: int) -> None:
        self.budget = budget
        self.key = key
        self.held = 0

    def grow(self, extra: int) -> bool:
        return self.budget._grow(self, extra)

    def resize(self, size: int) -> bool:
        """Grows or shrinks to ``size`` bytes; False (nothing changed) when growing is refused."""
        if size > self.held:
            return self.grow(size - self.held)
        self.budget._shrink(self, self.held - size)
        return True

    def release(self) -> None:
        self.budget._release(self)


class MemoryBudget:
    """Thread-safe bytes held by requests being read, decoded or waiting for the writer."""

    def __init__(self, max_bytes: int, max_queued: int) -> None:
        self.max_bytes = max_bytes
        self.max_queued = max_queued
        self.bytes = 0
        self.queued = 0
        self._active: dict[int, Reservation] = {}  # insertion order = age: the first key is the oldest
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def reserve(self) -> Reservation:
        with self._lock:
            reservation = Reservation(self, next(self._keys))
            self._active[reservation.key] = reservation
            return reservation

    def try_queue(self) -> bool:
        """One more request waiting for the writer, unless ``max_queued`` already are."""
        with self._lock:
            if self.queued >= self.max_queued:
                return False
            self.queued += 1
            return True

    def unqueue(self) -> None:
        with self._lock:
            self.queued -= 1

    def _grow(self, reservation: Reservation, extra: int) -> bool:
        with self._lock:
            if reservation.key not in self._active:
                return False
            oldest = next(iter(self._active)) == reservation.key
            if not admit(self.bytes, extra, self.max_bytes, oldest):
                return False
            self.bytes += extra
            reservation.held += extra
            return True

    def _shrink(self, reservation: Reservation, less: int) -> None:
        with self._lock:
            less = min(less, reservation.held)
            self.bytes -= less
            reservation.held -= less

    def _release(self, reservation: Reservation) -> None:
        with self._lock:
            if self._active.pop(reservation.key, None) is not None:
                self.bytes -= reservation.held
                reservation.held = 0
