"""Benchmark ``spanrl ingest`` against DuckDB's bare ``COPY (FROM read_ndjson(...)) TO '...parquet'``.

    .venv/bin/python bench/ingest.py --spans 200000          # 1x and 4x input, ~1 KB prompts

Generates collector-style span files (closed, rotated names; 512 spans per line like a batch
processor; one agent trace = invoke_agent + 3 chat spans with ~1 KB gen_ai.input.messages + 1 tool
span + 1 ``spanrl.reward`` span carrying ``spanrl.task_id``, so the full chain writes a snapshot),
then in separate processes (so peak RSS is each run's own):
  * baseline:  DuckDB COPY (FROM read_ndjson(files)) TO x.parquet (the same threads / memory limit and
               preserve_insertion_order = false, without which it runs out of memory at 4x 200k spans)
  * stage 1:   spanrl ingest --no-transitions  (files -> deduplicated lake)
  * full:      spanrl ingest                   (+ transitions, when stage 2 is installed)
  * stage 2:   the same command again on the built lake (stage 1 finds nothing new; every
               transition is rebuilt and the snapshot comes out unchanged)
and prints spans/s, MB/s, the ratio to the baseline (goal >= 0.5) and peak RSS at 1x and 4x
(goal: flat). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPANS_PER_LINE = 512
BASELINE_RETRY_LIMIT = "12GB"
FILE_BYTES = 64 << 20
PROMPT = ("You are a careful assistant. " * 40)[:1000]

RUNNER = r"""
import resource, subprocess, sys, time, json
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": r.returncode, "seconds": dt, "rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "sys_s": ru.ru_stime, "minflt": ru.ru_minflt, "majflt": ru.ru_majflt, "err": r.stderr[-2000:]}))
"""

BASELINE = r"""
import duckdb, sys
con = duckdb.connect()
con.execute(f"SET memory_limit = '{sys.argv[2]}'")
con.execute(f"SET temp_directory = '{sys.argv[3]}'")
con.execute("SET preserve_insertion_order = false")  # as spanrl does; with it on, 4x runs out of memory
files = sys.argv[4:]
con.execute(f"COPY (FROM read_ndjson({files!r})) TO '{sys.argv[1]}' (FORMAT parquet, COMPRESSION zstd)")
"""


def _kv(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _trace_spans(n: int, t0: int) -> list[dict]:
    """One agent run: invoke_agent root, three chat calls with ~1 KB prompts, one tool span."""
    tid = os.urandom(16).hex()
    root = os.urandom(8).hex()
    spans = [{"traceId": tid, "spanId": root, "flags": 256, "name": "invoke_agent bench", "kind": 1,
              "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t0 + 9_000_000_000),
              "attributes": [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "bench"),
                             _kv("spanrl.rollout_id", f"r{n}")], "status": {}}]
    for i in range(3):
        msgs = json.dumps([{"role": "system", "parts": [{"type": "text", "content": PROMPT}]},
                           {"role": "user", "parts": [{"type": "text", "content": f"question {n}.{i}"}]}])
        out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"answer {n}.{i}"}],
                           "finish_reason": "stop"}])
        spans.append({"traceId": tid, "spanId": os.urandom(8).hex(), "parentSpanId": root, "flags": 256,
                      "name": "chat bench-model", "kind": 3, "startTimeUnixNano": str(t0 + i * 2_000_000_000),
                      "endTimeUnixNano": str(t0 + i * 2_000_000_000 + 900_000_000),
                      "attributes": [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.provider.name", "openai"),
                                     _kv("gen_ai.request.model", "bench-model"), _kv("gen_ai.request.temperature", 0.7),
                                     _kv("gen_ai.response.id", f"chatcmpl-{n}-{i}"),
                                     _kv("gen_ai.usage.input_tokens", 250), _kv("gen_ai.usage.output_tokens", 12),
                                     _kv("gen_ai.input.messages", msgs), _kv("gen_ai.output.messages", out)],
                      "status": {}})
    spans.append({"traceId": tid, "spanId": os.urandom(8).hex(), "parentSpanId": root, "flags": 256,
                  "name": "execute_tool search", "kind": 1, "startTimeUnixNano": str(t0 + 7_000_000_000),
                  "endTimeUnixNano": str(t0 + 7_100_000_000),
                  "attributes": [_kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", "search")],
                  "status": {}})
    # the run's outcome, as spanrl.emit_reward records it: a span named spanrl.reward under the root
    spans.append({"traceId": tid, "spanId": os.urandom(8).hex(), "parentSpanId": root, "flags": 256,
                  "name": "spanrl.reward", "kind": 1, "startTimeUnixNano": str(t0 + 8_900_000_000),
                  "endTimeUnixNano": str(t0 + 8_900_000_000),
                  "attributes": [_kv("spanrl.reward", float(n % 5) / 4), _kv("spanrl.task_id", f"task-{n % 50}")],
                  "status": {}})
    return spans


def generate(folder: Path, n_spans: int, first_rollout: int = 0, t0: int = 1_767_225_600_000_000_000,
             prefix: str = "traces-2026-01-01") -> tuple[list[Path], int]:
    """Collector-style rotated JSON-lines files holding ``n_spans`` spans; returns (files, bytes).
    Rollouts are numbered from ``first_rollout`` (ids stay unique when several calls share a lake)."""
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    fh, size, made, n = None, 0, 0, first_rollout
    while made < n_spans:
        batch: list[dict] = []
        while len(batch) < SPANS_PER_LINE and made + len(batch) < n_spans:
            batch.extend(_trace_spans(n, t0 + (n - first_rollout) * 10_000_000_000))
            n += 1
        made += len(batch)
        line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "bench")]},
                                              "scopeSpans": [{"scope": {"name": "bench"}, "spans": batch}]}]},
                          separators=(",", ":")) + "\n"
        if fh is None or size > FILE_BYTES:
            if fh:
                fh.close()
            path = folder / f"{prefix}T00-{len(files) // 60:02d}-{len(files) % 60:02d}.000.jsonl"
            files.append(path)
            fh, size = open(path, "w"), 0
        fh.write(line)
        size += len(line)
    if fh:
        fh.close()
    return files, sum(p.stat().st_size for p in files)


def measure(cmd: list[str], check: bool = True) -> dict:
    out = subprocess.run([sys.executable, "-c", RUNNER, *cmd], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0 and check:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed:\n{res['err']}")
    return res


def bench_size(root: Path, n_spans: int, memory_limit: str, full: bool) -> dict:
    data = root / f"data-{n_spans}"
    files, nbytes = generate(data / "otel", n_spans)
    tmp = root / "tmp"
    tmp.mkdir(exist_ok=True)
    bare = [sys.executable, "-c", BASELINE, str(root / f"bare-{n_spans}.parquet")]
    base = measure([*bare, memory_limit, str(tmp), *map(str, files)], check=False)
    if base["rc"] != 0 and "Out of Memory" in base["err"]:
        # one COPY over all files holds more than the limit; give it room so there is a baseline
        print(f"  (baseline COPY ran out of memory at {memory_limit}; re-run at {BASELINE_RETRY_LIMIT})")
        base = measure([*bare, BASELINE_RETRY_LIMIT, str(tmp), *map(str, files)])
        base["oom_at"] = memory_limit
    spanrl = [sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--memory-limit", memory_limit]
    stage1 = measure([*spanrl, "--no-transitions"])
    row = {"spans": n_spans, "files": len(files), "mb": nbytes / 1e6, "baseline": base, "stage1": stage1}
    if full:
        shutil.rmtree(data / "lake")
        row["full"] = measure([*spanrl, "--settle", "0s"])
        row["snapshot"] = _snapshot_rows(data)
        # stage 2 alone: the same command again finds no new file (stage 1 is a no-op) and
        # rebuilds every transition (the snapshot comes out unchanged, so nothing is written)
        row["stage2"] = measure([*spanrl, "--settle", "0s"])
    shutil.rmtree(data)
    return row


def _snapshot_rows(data: Path) -> int:
    """Rows of the snapshot the full chain wrote (0 when it wrote none)."""
    latest = data / "transitions" / "LATEST"
    if not latest.is_file():
        return 0
    manifest = json.loads((data / "transitions" / latest.read_text().strip() / "manifest.json").read_text())
    counts = manifest.get("row_counts") or manifest.get("rows") or {}
    return counts.get("transitions", 0) if isinstance(counts, dict) else int(counts)


def report(row: dict) -> None:
    b = row["baseline"]
    print(f"\n{row['spans']:,} spans, {row['files']} files, {row['mb']:.0f} MB")
    print(f"  {'run':<28}{'seconds':>9}{'spans/s':>12}{'MB/s':>8}{'ratio':>7}{'peak RSS MB':>13}")
    for name, key in (("duckdb COPY read_ndjson", "baseline"), ("spanrl ingest (stage 1)", "stage1"),
                      ("spanrl ingest (full chain)", "full"), ("  stage 2 alone (re-run)", "stage2")):
        if key not in row:
            continue
        r = row[key]
        print(f"  {name:<28}{r['seconds']:>9.1f}{row['spans'] / r['seconds']:>12,.0f}{row['mb'] / r['seconds']:>8.1f}"
              f"{b['seconds'] / r['seconds']:>7.2f}{r['rss_mb']:>13,.0f}")
    if "full" in row:
        print(f"  stage 2 = full - stage 1: {row['full']['seconds'] - row['stage1']['seconds']:.1f} s; "
              f"snapshot rows: {row['snapshot']:,}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spans", type=int, default=2_000_000, help="spans at 1x (4x is also run unless --no-4x)")
    p.add_argument("--no-4x", action="store_true")
    p.add_argument("--memory-limit", default="2GB")
    p.add_argument("--no-full", action="store_true", help="skip the full chain (stage 1 + transitions)")
    p.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    args = p.parse_args()
    try:
        import spanrl.transitions.build  # noqa: F401
        full = not args.no_full
    except ImportError:
        full = False
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-bench-"))
    sizes = [args.spans] if args.no_4x else [args.spans, 4 * args.spans]
    rows = []
    for n in sizes:
        t = time.perf_counter()
        rows.append(bench_size(root, n, args.memory_limit, full))
        report(rows[-1])
        print(f"  (size done in {time.perf_counter() - t:.0f}s)")
    if len(rows) == 2:
        a, b = rows
        full = (f", full chain {b['full']['rss_mb'] / a['full']['rss_mb']:.2f}" if "full" in a else "")
        print(f"\npeak RSS 4x/1x: stage 1 {b['stage1']['rss_mb'] / a['stage1']['rss_mb']:.2f}{full}, "
              f"baseline {b['baseline']['rss_mb'] / a['baseline']['rss_mb']:.2f}")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
