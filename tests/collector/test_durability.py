"""kill -9 the collector while four real SDK exporters stream into it, restart it on the same ports:
every acknowledged span is in the files, every line parses (but possibly one torn line per kill), and
the restart appends instead of truncating."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.helpers.collector import port_accepts, running_collector, wait_until

SENDER = Path(__file__).with_name("sender.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_kill_9_mid_stream_loses_no_acknowledged_span(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ports = ["--http-port", str(free_port()), "--grpc-port", str(free_port())]
    acked = [tmp_path / f"acked-{k}.txt" for k in range(4)]
    senders: list[subprocess.Popen[str]] = []
    with running_collector(data, extra_args=[*ports, "--rotate-mb", "0.05"]) as ep:
        for k in range(4):
            protocol, endpoint = (("grpc", "http://" + ep.grpc) if k % 2 else ("http/protobuf", ep.http))
            env = {x: v for x, v in os.environ.items() if not x.startswith("OTEL_")}
            env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                        "OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_SERVICE_NAME": f"d{k}",
                        "OTEL_EXPORTER_OTLP_TIMEOUT": "30"})
            senders.append(subprocess.Popen(
                [sys.executable, str(SENDER), "--spans", "1500", "--tag", f"d{k}", "--rate", "600",
                 "--batch", "20", "--acked", str(acked[k])], env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True))
        def acked_so_far() -> int:
            return sum(1 for p in acked if p.exists() for _ in p.open())

        wait_until(lambda: acked_so_far() >= 200, "200 acknowledged spans before the kill", 60)  # well under way
        before = acked_so_far()
        ep.proc.send_signal(signal.SIGKILL)
        ep.proc.wait()
        at_kill = {line for path in (data / "otel").glob("traces*.jsonl")
                   for line in path.read_bytes().split(b"\n")[:-1] if line}
    wait_until(lambda: not port_accepts(int(ports[1])), "the killed collector's port to close")
    with running_collector(data, extra_args=[*ports, "--rotate-mb", "0.05"]):
        outputs = [p.communicate(timeout=120)[0] for p in senders]
    assert all(p.returncode == 0 for p in senders), outputs
    assert 0 < before < 4 * 1500, "the kill was not mid-stream; the test proved nothing"

    files = sorted((data / "otel").glob("traces*.jsonl"))
    assert len(files) > 2  # rotation happened
    torn, names = 0, set()
    for path in files:
        for line in path.read_bytes().splitlines():
            if not line:
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                torn += 1
                continue
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    names.update(s["name"] for s in ss["spans"])
        assert path.read_bytes().endswith(b"\n")
    assert torn <= 1
    acked_names = {n for p in acked if p.exists() for n in p.read_text().split()}
    assert acked_names <= names, f"{len(acked_names - names)} acknowledged spans missing"
    assert len(acked_names) == 4 * 1500  # the exporters retried through the restart
    # appended, never truncated: every line on disk at the kill is still there after the restart
    final = {line for path in files for line in path.read_bytes().splitlines()}
    assert at_kill and at_kill <= final
