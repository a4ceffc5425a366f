"""A real collector rotating its files under ingests that run all the time (issue 9, item 1).

The collector is a real process with a tiny ``--rotate-mb``; a sender posts OTLP batches and counts
the spans the collector acknowledged (HTTP 200); ingest runs over and over meanwhile, so rotations
land at every point of its plan -> read -> record sequence. Afterwards every acknowledged span is in
the lake exactly once. The default run is short; ``make reliability`` also runs five long ones.
"""

from __future__ import annotations

import random
import threading
import time
import urllib.error
import urllib.request

import pytest

from spanrl.ingest.views import connect
from tests.helpers.collector import make_traces, running_collector
from tests.ingest.conftest import ingest


class Runs:
    """Ingest runs finished so far; the sender waits on it, so the race is driven by events: however
    slow the machine, ingest runs at least once per ``EVERY`` batches while spans arrive."""

    EVERY = 25

    def __init__(self) -> None:
        self.done = 0
        self.cond = threading.Condition()

    def finished_one(self) -> None:
        with self.cond:
            self.done += 1
            self.cond.notify_all()

    def wait_beyond(self, n: int, stop: threading.Event) -> None:
        with self.cond:
            while self.done <= n and not stop.is_set():
                self.cond.wait(0.5)


def _send(url: str, batches: int, spans_per_batch: int, acked: set[str], stop: threading.Event, runs: Runs) -> None:
    """Post ``batches`` protobuf requests, at least one ingest run between every ``Runs.EVERY`` of
    them (and small pauses, so rotations also land mid-run); the span ids of every 200 go into ``acked``."""
    for i in range(batches):
        if stop.is_set():
            return
        if i and i % Runs.EVERY == 0:
            runs.wait_beyond(runs.done, stop)
        time.sleep(0.01)
        req = make_traces(spans_per_batch, name="race")
        body = req.SerializeToString()
        http = urllib.request.Request(url + "/v1/traces", data=body, method="POST",
                                      headers={"Content-Type": "application/x-protobuf"})
        try:
            with urllib.request.urlopen(http, timeout=10) as resp:
                ok = resp.status == 200
        except (urllib.error.URLError, OSError):
            ok = False
        if ok:
            acked.update(sp.span_id.hex() for sp in req.resource_spans[0].scope_spans[0].spans)


def _lake_span_ids(data) -> tuple[int, set[str]]:
    con = connect(data)
    rows = [r[0] for r in con.execute("SELECT span_id FROM spans WHERE name LIKE 'race-%'").fetchall()]
    return len(rows), set(rows)


def _race(tmp_path, batches: int, seed: int) -> tuple[int, int]:
    """Run the race; returns (acknowledged spans, ingest runs). Asserts exactly-once."""
    rng = random.Random(seed)
    acked: set[str] = set()
    stop = threading.Event()
    progress = Runs()
    with running_collector(tmp_path, extra_args=["--rotate-mb", "0.02"]) as ep:
        sender = threading.Thread(target=_send, args=(ep.http, batches, 12, acked, stop, progress), daemon=True)
        sender.start()
        runs = 0
        try:
            while sender.is_alive():
                ingest(tmp_path)
                runs += 1
                progress.finished_one()
                time.sleep(rng.uniform(0, 0.05))  # vary where in the rotation cycle the next plan lands
        finally:
            stop.set()
            sender.join(30)
    ingest(tmp_path)  # the collector is stopped: everything acknowledged is on disk now
    rotated = len(list((tmp_path / "otel").glob("traces-*.jsonl")))
    n, ids = _lake_span_ids(tmp_path)
    missing = acked - ids
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged spans never reached the lake"
    assert n == len(ids) == len(acked), "a span is in the lake more than once (or was never sent)"
    assert rotated >= 5 and runs >= (batches - 1) // Runs.EVERY, (rotated, runs)  # by construction, not speed
    return len(acked), runs


def test_real_collector_rotating_under_concurrent_ingest(tmp_path) -> None:
    _race(tmp_path, batches=150, seed=1)


@pytest.mark.heavy
@pytest.mark.parametrize("seed", range(5))
def test_real_collector_rotating_under_concurrent_ingest_long(tmp_path, seed: int) -> None:
    _race(tmp_path, batches=800, seed=seed)
