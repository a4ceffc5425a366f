"""Chaos: kill -9 the collector and the ingest loop at random while real SDK exporters stream; afterwards
every acknowledged span is in the lake exactly once (issue 9, "Done when"). ``make chaos``.

- 4 sender processes (tests/collector/sender.py, the real OTel SDK: 2 over HTTP, 2 over gRPC) send
  spans named ``<tag>-<i>`` at a steady rate; each appends the names whose export was answered
  200 / OK to its ``acked`` file (counted on the sender side).
- The collector runs with a small ``--rotate-mb`` on fixed ports, so every restart is on the same
  address and the exporters' retries reach it.
- An ingest loop runs ``spanrl ingest --no-transitions`` every few seconds.
- A killer sends SIGKILL to the collector or to the running ingest, at random, ``SPANRL_CHAOS_KILLS``
  times (default 24) spread over ``SPANRL_CHAOS_S`` seconds (default 600); a killed collector is
  restarted after a short pause.
- Then: senders finish, the collector stops, a last ingest runs, and the lake is compared with the
  acknowledged names. Progress and the result go to ``SPANRL_CHAOS_OUT`` (default
  bench/out/chaos.json) after every kill, so a long run that is cut short still leaves its numbers.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb
import pytest

from tests.helpers.collector import START_TIMEOUT_S, stop_collector

CHAOS_S = float(os.environ.get("SPANRL_CHAOS_S", "600"))
KILLS = int(os.environ.get("SPANRL_CHAOS_KILLS", "24"))
OUT = Path(os.environ.get("SPANRL_CHAOS_OUT", Path(__file__).resolve().parents[2] / "bench" / "out" / "chaos.json"))
SENDER = Path(__file__).with_name("sender.py")
RATE = 40  # spans/s per sender
INGEST_EVERY_S = 3.0
PROTOCOLS = ["http/protobuf", "grpc", "http/protobuf", "grpc"]


@dataclass
class ChaosRecord:
    """What the run did and found; written to OUT as it goes."""

    planned_s: float
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S"))
    elapsed_s: float = 0.0
    collector_kills: int = 0
    ingest_kills: int = 0
    ingest_runs: int = 0
    ingest_failures: int = 0
    acked_spans: int = 0
    lake_spans: int = 0
    missing: int = 0  # acknowledged, not in the lake
    missing_in_files: int = 0  # of those, not in the span files either (the collector lost them)
    duplicated: int = 0
    missing_examples: list[str] = field(default_factory=list)
    finished: bool = False

    def save(self) -> None:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        tmp = OUT.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, OUT)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """The embedded collector as a process that can be killed and started again on the same ports."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.http_port, self.grpc_port = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data / "collector.log"

    def start(self) -> None:
        data = self.data
        data.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "spanrl", "collector", "--embedded", "--data", str(data),
                 "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port),
                 "--rotate-mb", "0.25", "--report-interval", "30"], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.http_port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"collector exited {self.proc.returncode}: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.05)
        raise RuntimeError("collector did not start")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


class IngestLoop(threading.Thread):
    """``spanrl ingest --no-transitions`` every few seconds until stopped; the killer may kill a run."""

    def __init__(self, data: Path, record: ChaosRecord) -> None:
        super().__init__(daemon=True)
        self.data, self.record = data, record
        self.current: subprocess.Popen[bytes] | None = None
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.is_set():
            self.run_once()
            self.stop.wait(INGEST_EVERY_S)

    def run_once(self) -> int:
        with self.lock:
            self.current = subprocess.Popen(
                [sys.executable, "-m", "spanrl", "ingest", "--no-transitions", "--data", str(self.data)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = self.current.communicate()
        code = self.current.returncode
        with self.lock:
            self.current = None
        self.record.ingest_runs += 1
        if code not in (0, -signal.SIGKILL):
            self.record.ingest_failures += 1
            (self.data / "ingest-failures.log").open("ab").write(err + b"\n---\n")
        return code

    def kill_running(self) -> bool:
        with self.lock:
            if self.current is None or self.current.poll() is not None:
                return False
            self.current.send_signal(signal.SIGKILL)
            return True


def start_senders(tmp: Path, collector: Collector, spans: int) -> list[subprocess.Popen[bytes]]:
    senders = []
    for k, protocol in enumerate(PROTOCOLS):
        endpoint = (f"http://127.0.0.1:{collector.grpc_port}" if protocol == "grpc"
                    else f"http://127.0.0.1:{collector.http_port}")
        env = {x: v for x, v in os.environ.items() if not x.startswith("OTEL_")}
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                    "OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_SERVICE_NAME": f"chaos{k}",
                    "OTEL_EXPORTER_OTLP_TIMEOUT": "10"})
        senders.append(subprocess.Popen(
            [sys.executable, str(SENDER), "--spans", str(spans), "--tag", f"c{k}", "--rate", str(RATE),
             "--batch", "50", "--acked", str(tmp / f"acked-{k}.txt")], env=env,
            stdout=open(tmp / f"sender-{k}.log", "wb"), stderr=subprocess.STDOUT))
    return senders


def file_names(otel: Path) -> set[str]:
    """Span names in the collector's files (torn lines skipped): tells a collector loss from an ingest loss."""
    names: set[str] = set()
    for path in otel.glob("traces*.jsonl"):
        for line in path.read_bytes().splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            names.update(s["name"] for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])
                         for s in ss.get("spans", []))
    return names


def lake_counts(data: Path) -> dict[str, int]:
    glob = str(data / "lake" / "spans" / "*" / "*.parquet")
    if not list((data / "lake" / "spans").glob("*/*.parquet")):
        return {}
    rows = duckdb.sql(f"SELECT name, count(*) FROM read_parquet('{glob}', hive_partitioning = true) "
                      "GROUP BY name").fetchall()
    return dict(rows)


@pytest.mark.chaos
@pytest.mark.timeout(int(CHAOS_S) + 900)
def test_random_kill_9_of_collector_and_ingest_loses_no_acknowledged_span(tmp_path: Path) -> None:
    record = ChaosRecord(planned_s=CHAOS_S)
    data = tmp_path / "data"
    collector = Collector(data)
    collector.start()
    senders = start_senders(tmp_path, collector, spans=int(RATE * CHAOS_S))
    ingest = IngestLoop(data, record)
    ingest.start()
    rng = random.Random(int(os.environ.get("SPANRL_CHAOS_SEED", "9")))
    start = time.monotonic()
    try:
        for n in range(KILLS):
            # kills spread evenly with jitter; the last one well before the senders end
            target = start + (n + rng.uniform(0.3, 1.0)) * CHAOS_S / (KILLS + 1)
            time.sleep(max(0.0, target - time.monotonic()))
            if rng.random() < 0.5 and ingest.kill_running():
                record.ingest_kills += 1
            else:
                collector.kill()
                record.collector_kills += 1
                time.sleep(rng.uniform(0.1, 2.0))
                collector.start()
            record.elapsed_s = round(time.monotonic() - start, 1)
            record.save()
        for proc in senders:
            proc.wait(timeout=CHAOS_S + 600)
    finally:
        ingest.stop.set()
        ingest.join(timeout=600)
        for proc in senders:
            if proc.poll() is None:
                proc.kill()
        assert collector.proc is not None
        stop_collector(collector.proc)
    assert ingest.run_once() == 0, (data / "ingest-failures.log").read_text(errors="replace")[-3000:]

    acked = [n for k in range(len(PROTOCOLS)) if (tmp_path / f"acked-{k}.txt").exists()
             for n in (tmp_path / f"acked-{k}.txt").read_text().split()]
    counts = lake_counts(data)
    missing = sorted(set(acked) - set(counts))
    record.elapsed_s = round(time.monotonic() - start, 1)
    record.acked_spans = len(set(acked))
    record.lake_spans = sum(counts.values())
    record.missing = len(missing)
    record.missing_examples = missing[:20]
    record.missing_in_files = len(set(missing) - file_names(data / "otel")) if missing else 0
    record.duplicated = sum(1 for c in counts.values() if c > 1)
    record.finished = True
    record.save()
    print(json.dumps(asdict(record)))
    assert record.collector_kills + record.ingest_kills >= KILLS
    assert record.acked_spans > 0.5 * RATE * CHAOS_S * len(PROTOCOLS), "the senders barely got through"
    assert not missing, f"{len(missing)} acknowledged spans are not in the lake: {missing[:10]}"
    assert record.duplicated == 0, "spans in the lake more than once"
