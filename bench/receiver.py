"""Benchmark: spans/s the embedded receiver accepts from real OTel SDK exporters, writing span files,
against the same receiver in its hidden ``--discard`` mode (parse, then drop), in the same run.

    .venv/bin/python bench/receiver.py [--spans 20000] [--senders 1 4] [--protocols http grpc]

Each sender is a separate process with a BatchSpanProcessor (large queue, 512-span batches) and realistic
spans (12 attributes, a 1 KB prompt). Throughput = all spans / (last flush done - first span started), from
the senders' own clocks, so interpreter start-up is not counted. Write and discard runs alternate
``--repeat`` times and medians are printed, with the write/discard ratio (goal >= 0.8), the
receiver's peak RSS (VmHWM) and its CPU time per span in both modes (steadier than spans/s when other
jobs share the machine). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY = re.compile(r"ready.* http=(\S+):(\d+) grpc=(\S+):(\d+)")


def sender(n_spans: int, tag: str) -> None:
    """Runs in a child process; configured only by OTEL_EXPORTER_OTLP_* env vars."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), max_queue_size=n_spans + 1,
                                             max_export_batch_size=512, schedule_delay_millis=100))
    tracer = tp.get_tracer("bench")
    prompt = "x" * 1000
    start = time.time()
    for i in range(n_spans):
        with tracer.start_as_current_span(f"chat {tag}") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                 "gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": 7,
                                 "gen_ai.request.temperature": 0.7, "gen_ai.input.messages": prompt,
                                 "bench.tag": tag, "bench.i": i, "a": "b", "c": True, "d": 1.5, "e": "f"})
    ok = tp.force_flush(600_000)
    end = time.time()
    tp.shutdown()
    print(json.dumps({"start": start, "end": end, "ok": ok}))


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the receiver: its CPU cost, which load on a shared machine does not change much."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_case(protocol: str, n_senders: int, n_spans: int, discard: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "collector.log"
        args = [sys.executable, "-m", "spanrl", "collector", "--embedded", "--data", tmp,
                "--http-port", "0", "--grpc-port", "0", *(["--discard"] if discard else [])]
        with log.open("w") as f:
            proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
        try:
            while not (m := READY.search(log.read_text())):
                if proc.poll() is not None:
                    raise RuntimeError(log.read_text())
                time.sleep(0.05)
            endpoint = (f"http://{m.group(1)}:{m.group(2)}" if protocol == "http"
                        else f"http://{m.group(3)}:{m.group(4)}")
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_INSECURE": "true",
                        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc" if protocol == "grpc" else "http/protobuf",
                        "OTEL_EXPORTER_OTLP_TIMEOUT": "120"})
            cpu0 = cpu_seconds(proc.pid)
            procs = [subprocess.Popen([sys.executable, __file__, "--sender", str(n_spans), f"s{k}"], env=env,
                                      stdout=subprocess.PIPE, text=True) for k in range(n_senders)]
            results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
            rss = peak_rss_mb(proc.pid)
            cpu = cpu_seconds(proc.pid) - cpu0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        written = 0
        if not discard:
            for path in Path(tmp, "otel").glob("traces*.jsonl"):
                for line in path.read_bytes().splitlines():
                    written += sum(len(ss["spans"]) for rs in json.loads(line)["resourceSpans"]
                                   for ss in rs["scopeSpans"])
        total = n_spans * n_senders
        wall = max(r["end"] for r in results) - min(r["start"] for r in results)
        return {"spans_per_s": total / wall, "rss_mb": rss, "ok": all(r["ok"] for r in results),
                "cpu_us_per_span": cpu / total * 1e6,
                "written": written, "total": total}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--sender":
        sender(int(sys.argv[2]), sys.argv[3])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=20000, help="spans per run (split over the senders)")
    ap.add_argument("--senders", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--protocols", nargs="+", default=["http", "grpc"])
    ap.add_argument("--repeat", type=int, default=3, help="alternating write/discard runs; medians reported")
    args = ap.parse_args()
    print(f"{'protocol':8} {'senders':>7} {'write sp/s':>11} {'discard sp/s':>13} {'ratio':>6} "
          f"{'peak RSS MB':>11} {'CPU us/span w/d':>16}  check")
    for protocol in args.protocols:
        for n in args.senders:
            per = args.spans // n
            writes, discards = [], []
            for _ in range(args.repeat):  # alternate, so load drift on a shared machine hits both
                writes.append(run_case(protocol, n, per, discard=False))
                discards.append(run_case(protocol, n, per, discard=True))
            w = statistics.median(r["spans_per_s"] for r in writes)
            d = statistics.median(r["spans_per_s"] for r in discards)
            rss = max(r["rss_mb"] for r in writes)
            lost = sum(r["total"] - r["written"] for r in writes)
            check = "ok" if all(r["ok"] for r in writes) and lost == 0 else f"LOST {lost}"
            cw = statistics.median(r["cpu_us_per_span"] for r in writes)
            cd = statistics.median(r["cpu_us_per_span"] for r in discards)
            print(f"{protocol:8} {n:7d} {w:11.0f} {d:13.0f} {w / d:6.2f} {rss:11.0f} {cw:8.0f} /{cd:6.0f}  {check}",
                  flush=True)


if __name__ == "__main__":
    main()
