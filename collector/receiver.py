"""The one core path both front doors call: decode -> ``export(decoded, reservation)`` -> writer thread.

Like the collector's ``receiver/otlpreceiver/internal/trace/otlp.go``: gRPC and HTTP only read, decode
and map outcomes to their status codes; admission, counting and the hand-off to the writer live here.
"""

from __future__ import annotations

import asyncio
import hmac
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from spanrl.collector.config import CollectorConfig
from spanrl.collector.decode import Decoded
from spanrl.collector.limits import MemoryBudget, Reservation, queued_cost
from spanrl.collector.otlpjson import logs_to_json, traces_to_json
from spanrl.collector.writer import Outcome, SignalWriter, WriteItem

__all__ = ["Receiver", "authorized"]

SIGNALS = ("traces", "logs", "metrics")
OFFLOAD_BYTES = 1 << 20  # bodies bigger than this are decoded on a worker thread, not on the event loop
# what the periodic report counts: the answers that refused data, per transport
REFUSAL_PREFIXES = ("http_", "grpc_")
_TO_LINE: dict[str, Callable[[Any], bytes]] = {
    "traces": lambda request: traces_to_json(request, newline=True),
    "logs": lambda request: logs_to_json(request, newline=True),
}


def authorized(header: str | None, token: str | None) -> bool:
    """``Authorization: Bearer TOKEN`` check, constant time; no token configured -> always true.

    Any text is answered, never raised on: a header with non-ASCII or undecodable bytes is compared
    as its UTF-8 bytes (surrogates kept), so it is simply not the token (401, not 500).
    """
    if token is None:
        return True
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    given = value.strip().encode("utf-8", "surrogatepass")
    return scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode("utf-8"))


class Receiver:
    """Admission + hand-off to the writer; counts what happened instead of logging each request."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.budget = MemoryBudget(config.queue_bytes, config.queue_items)
        self.stats: Counter[str] = Counter()
        self.writer = None if config.discard else SignalWriter(
            config.otel_dir, config.rotate_bytes, config.fsync, on_done=self._done)
        # called with (signal, request message) once a request is on disk, before it is acknowledged,
        # on the writer thread: ``spanrl rollout`` counts each attempt's spans with it
        self.observers: list[Callable[[str, Any], None]] = []

    def _done(self, item: WriteItem) -> None:
        if item.release is not None:
            item.release()
        self.budget.unqueue()

    def submit(self, decoded: Decoded, reservation: Reservation) -> Future[Outcome]:
        """Thread-safe: queue one decoded request; the future resolves once it is on disk.

        Takes over ``reservation``: it is released when the request is refused or written.
        """
        fut: Future[Outcome] = Future()
        signal = decoded.signal
        if signal == "metrics" or decoded.items == 0 or self.writer is None:
            reservation.release()
            self.stats[f"{signal}_dropped" if signal == "metrics" else f"{signal}_items"] += decoded.items
            fut.set_result(Outcome.OK)
            return fut
        if not reservation.resize(queued_cost(decoded.size, decoded.items)) or not self.budget.try_queue():
            reservation.release()
            self.stats["busy"] += 1
            fut.set_result(Outcome.BUSY)
            return fut
        self.stats[f"{signal}_items"] += decoded.items
        self.stats[f"{signal}_requests"] += 1
        for observe in self.observers:
            fut.add_done_callback(lambda f, o=observe: f.result() is Outcome.OK and o(signal, decoded.request))
        self.writer.submit(WriteItem(signal, decoded.request, _TO_LINE[signal], reservation.held, fut,
                                     release=reservation.release))
        return fut

    async def export(self, decoded: Decoded, reservation: Reservation) -> Outcome:
        """The core path: every transport ends here and maps the outcome to its status."""
        return await asyncio.wrap_future(self.submit(decoded, reservation))

    def reject(self, reason: str) -> None:
        """Counts a refused request (bad payload, auth, size, busy) without logging each one."""
        self.stats[reason] += 1

    def refusals(self) -> dict[str, int]:
        """Refused answers so far by status (``http_429``, ``grpc_unavailable``...), for the reports."""
        return {k: v for k, v in sorted(self.stats.items()) if k.startswith(REFUSAL_PREFIXES)}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
