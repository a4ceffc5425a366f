"""How fast can a night's chain be at all? The full chain against a minimal one, in the same run.

    .venv/bin/python bench/night_floor.py --rollouts 10000 --rounds 3   # the night of bench/nightly.py
    .venv/bin/python bench/night_floor.py --rollouts 100000 --fixed-rollouts 1000   # 600k spans

Issue 28 asks every night's full chain (lake + stage-2 tables + snapshot) to run at >= 0.35x DuckDB's
bare ``read_ndjson -> parquet`` of that night's files (issue 11 asked 0.5x), in wall and CPU time.
This measures where those targets sit against the least work a chain must do, each in its own fresh
process (imports included, as in bench/nightly.py), over one generated night:

  * bare:   DuckDB's ``COPY (FROM read_ndjson(files)) TO x.parquet`` (bench/ingest.py's baseline)
  * floor:  stage 1 exactly as ``spanrl ingest`` runs it (spanrl's OTLP loader SQL, attributes
            converted, date-partitioned zstd Parquet), then llm_calls from the one convention the
            night uses (the genai_latest SQL spanrl ships), transition rows (calls joined to their
            root span's rollout id, numbered by start time) and a sha256 digest per rollout, each
            written to Parquet. No dedupe of multi-convention calls, no agents, rollouts,
            completeness, rewards, AIR, tool calls, coverage, segments, manifest or file state.
  * bare-floor: as floor, but llm_calls only extracts the two message strings (no conversion)
  * spanrl: ``spanrl ingest --settle 0s`` into a fresh data root (the whole chain)

and prints the median wall seconds, CPU seconds and peak RSS of each, its ratios bare/x, and the
floor's per-step seconds. Each round also runs every kind on a small night (--fixed-rollouts, 100 by
default): a line through the two nights gives each chain's fixed cost per night (its intercept) and its
cost per span (its slope), and the report works out, for 0.35x and 0.5x in wall and CPU time, how many
microseconds per span a chain with spanrl's fixed cost may spend, against what the floor and spanrl
spend. Results are appended to ``DIR/floor.jsonl`` as each round ends; ``--report DIR/floor.jsonl``
prints the report of a finished run again. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from spanrl.memory import resolve_memory_limit  # noqa: E402

# The floor chain: llm_calls rows -> transition rows -> one digest per rollout. Kept here, next to
# the code that runs it, because it is a measuring stick and not part of spanrl.
# genai_latest.sql picks the spans whose events it reads from spanrl's span facts (ingest/sql/span_facts.sql);
# the floor has no facts pass, so this view answers that one question with the substring test the
# convention made itself before the facts existed
FLOOR_SPAN_EVENTS = """
CREATE VIEW _span_facts AS
SELECT trace_id, span_id,
       CASE WHEN contains(events, 'gen_ai.client.inference.operation.details')
            THEN ['gen_ai.client.inference.operation.details'] ELSE [] END AS event_names
FROM spans
"""
FLOOR_CALLS_CONVERTED = """
CREATE TEMP TABLE llm_calls AS
SELECT c.*, s.start_ns, s.parent_span_id
FROM ({calls}) c JOIN spans s USING (trace_id, span_id)
"""
FLOOR_CALLS_EXTRACTED = """
CREATE TEMP TABLE llm_calls AS
SELECT trace_id, span_id, start_ns, parent_span_id, m[1]::JSON AS input_messages, m[2]::JSON AS output_message
FROM (SELECT *, json_extract_string(attributes, ['$."gen_ai.input.messages"', '$."gen_ai.output.messages"']) AS m
      FROM spans WHERE contains(attributes, 'gen_ai.input.messages'))
"""
FLOOR_TRANSITIONS = """
CREATE TEMP TABLE transition_rows AS
SELECT r.rollout_id, c.trace_id, c.span_id,
       CAST(row_number() OVER (PARTITION BY r.rollout_id ORDER BY c.start_ns) - 1 AS INTEGER) AS step,
       CAST(c.input_messages AS VARCHAR) AS prompt_messages, CAST(c.output_message AS VARCHAR) AS response_message
FROM llm_calls c
JOIN (SELECT trace_id, attributes->>'spanrl.rollout_id' AS rollout_id FROM spans WHERE parent_span_id IS NULL) r
USING (trace_id)
"""
FLOOR_DIGESTS = """
SELECT rollout_id, sha256(string_agg(CAST(ROW(rollout_id, trace_id, span_id, step, prompt_messages,
                                              response_message) AS VARCHAR), chr(10) ORDER BY step)) AS digest
FROM transition_rows GROUP BY rollout_id
"""


def floor_run(out: Path, files: list[str], convert: bool) -> None:
    """The minimal chain in this (fresh) process; leaves its per-step seconds in ``out/steps.json``."""
    t_start = time.perf_counter()
    import duckdb

    from spanrl.ingest.anyvalue import register_any_json
    from spanrl.ingest.decode import split_lines
    from spanrl.ingest.lakeio import PARQUET_OPTIONS
    from spanrl.ingest.load import PIECE_BYTES
    from spanrl.ingest.views import read_sql, render_sql

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    steps = {"imports": time.perf_counter() - t_start}
    t = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    register_any_json(con)
    con.execute(read_sql("otlp_types"))
    for i, f in enumerate(files):  # a big file as line-aligned pieces, as spanrl's load_fast reads it
        work = out / f"work-{i}"
        work.mkdir()
        pieces = [str(p) for p in split_lines(Path(f), work, PIECE_BYTES)]
        con.execute(render_sql("trace_batches_ndjson", src=pieces, source_file=f, max_object_size=16 << 20))
        con.execute(f"COPY (SELECT * EXCLUDE (line_no) FROM ({read_sql('spans_load')})) TO '{out}/spans-{i}' "
                    f"({PARQUET_OPTIONS}, PARTITION_BY (\"date\"), OVERWRITE_OR_IGNORE)",
                    {"ingested_at": "2026-01-01T00:00:00Z"})
    steps["stage1"] = time.perf_counter() - t
    t = time.perf_counter()
    con.execute(f"CREATE VIEW spans AS SELECT * FROM read_parquet('{out}/spans-*/*/*.parquet', hive_partitioning=true)")
    con.execute(read_sql("logs_empty"))  # the night holds no log records (the conventions' event path reads logs)
    if convert:
        con.execute(read_sql("llm_macros"))
        con.execute(f"CREATE VIEW _llm_spans AS {read_sql('llm_spans')}")
        con.execute(FLOOR_SPAN_EVENTS)
        con.execute(FLOOR_CALLS_CONVERTED.format(calls=read_sql("llm_calls/genai_latest")))
    else:
        con.execute(FLOOR_CALLS_EXTRACTED)
    con.execute(f"COPY llm_calls TO '{out}/llm_calls.parquet' ({PARQUET_OPTIONS})")
    steps["llm_calls"] = time.perf_counter() - t
    t = time.perf_counter()
    con.execute(FLOOR_TRANSITIONS)
    con.execute(f"COPY (FROM transition_rows ORDER BY rollout_id, step) TO '{out}/transitions.parquet' "
                f"({PARQUET_OPTIONS})")
    con.execute(f"COPY ({FLOOR_DIGESTS}) TO '{out}/digests.parquet' ({PARQUET_OPTIONS})")
    steps["transitions"] = time.perf_counter() - t
    n = con.execute("SELECT count(*) FROM transition_rows").fetchone()[0]
    if n == 0:
        raise SystemExit("floor chain found no LLM calls: the night's spans do not use gen_ai.input.messages")
    (out / "steps.json").write_text(json.dumps({"steps": steps, "transitions": n}))


def _measure_floor(bench_ingest, out: Path, files: list[Path], convert: bool) -> dict:
    """``bench_ingest.measure`` of a floor run, with the per-step seconds it leaves in ``out``."""
    res = bench_ingest.measure([sys.executable, __file__, "--floor-run", str(out),
                                *(() if convert else ("--no-convert",)), *map(str, files)])
    return {**res, **json.loads((out / "steps.json").read_text())}


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


KINDS = ("bare", "bare_floor", "floor", "spanrl")
NAMES = {"bare": "bare read_ndjson -> parquet", "bare_floor": "floor, messages extracted (no conversion)",
         "floor": "floor (stage 1 + llm_calls + transitions)", "spanrl": "spanrl ingest (full chain)"}


def measure_night(bench_ingest, root: Path, files: list[Path], memory_limit: str,
                  kinds: tuple[str, ...] = KINDS) -> dict:
    """Each kind over ``files``, each in its own fresh process (spanrl into a fresh data root)."""
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    row = {}
    for kind in kinds:
        if kind == "bare":
            row[kind] = bench_ingest.measure([sys.executable, "-c", bench_ingest.BASELINE, str(tmp / "bare.parquet"),
                                              memory_limit, str(tmp), *map(str, files)])
        elif kind in ("floor", "bare_floor"):
            row[kind] = _measure_floor(bench_ingest, root / "floor", files, convert=kind == "floor")
        else:
            data = root / "data"
            shutil.rmtree(data, ignore_errors=True)
            (data / "otel").mkdir(parents=True)
            for f in files:  # a fresh data root each time: every run ingests the same night from scratch
                (data / "otel" / f.name).hardlink_to(f)
            row[kind] = bench_ingest.measure([sys.executable, "-m", "spanrl", "ingest", "--data", str(data),
                                              "--settle", "0s", "--memory-limit", memory_limit])
        row[kind] = {k: v for k, v in row[kind].items() if k != "err"}
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the night (6 spans each)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--fixed-rollouts", type=int, default=100,
                   help="rollouts of the small night that measures each chain's fixed cost per night (0: skip)")
    p.add_argument("--memory-limit", default="auto",
                   help="DuckDB's limit for both chains (auto: what `spanrl ingest` takes by default here)")
    p.add_argument("--dir", type=Path, default=None, help="work folder (default: a new temp dir)")
    p.add_argument("--report", type=Path, default=None, help="print the report of a results file (floor.jsonl) and exit")
    p.add_argument("--floor-run", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--no-convert", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.floor_run:
        floor_run(args.floor_run, args.files, convert=not args.no_convert)
        return
    if args.report:
        report([json.loads(line) for line in args.report.read_text().splitlines() if line.strip()])
        return

    args.memory_limit = resolve_memory_limit(args.memory_limit)  # the same bytes for both chains
    print(f"memory limit {args.memory_limit} (every chain alike)", flush=True)
    bench_ingest = _load("bench_ingest", "ingest.py")
    nightly = _load("bench_nightly", "nightly.py")
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-floor-"))
    root.mkdir(parents=True, exist_ok=True)
    files = nightly.write_night(root / "night", 0, args.rollouts)
    small = nightly.write_night(root / "small", 0, args.fixed_rollouts) if args.fixed_rollouts else []
    log = root / "floor.jsonl"
    print(f"one night: {args.rollouts} rollouts, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB in "
          f"{len(files)} files; {args.rounds} rounds, each kind in its own process"
          + (f"; fixed costs from a night of {args.fixed_rollouts} rollouts" if small else ""), flush=True)
    rounds = []
    for r in range(args.rounds):
        row = {"round": r + 1, "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "rollouts": args.rollouts,
               "spans": args.rollouts * nightly.SPANS_PER_ROLLOUT}
        row.update(measure_night(bench_ingest, root, files, args.memory_limit))
        if small:
            row["small"] = {"rollouts": args.fixed_rollouts, "spans": args.fixed_rollouts * nightly.SPANS_PER_ROLLOUT,
                            **measure_night(bench_ingest, root, small, args.memory_limit)}
        rounds.append(row)
        with open(log, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"round {r + 1}: " + ", ".join(f"{k} {row[k]['seconds']:.2f}s / {row[k]['cpu_s']:.2f} CPU s"
                                             for k in KINDS), flush=True)
    report(rounds)
    print(f"\nresults: {log}")


def _median(rows: list[dict], kind: str, key: str) -> float:
    return statistics.median(r[kind][key] for r in rows)


def report(rounds: list[dict]) -> None:
    """The chains side by side (medians), then, with a small night, what a 0.35x / 0.5x chain may
    spend: its fixed cost per night plus a cost per span, against what spanrl and the floor spend."""
    med = {k: {m: _median(rounds, k, m) for m in ("seconds", "cpu_s", "rss_mb")} for k in KINDS}
    bare = med["bare"]
    print(f"\n{'chain':<44}{'wall s':>8}{'CPU s':>8}{'RSS MB':>8}{'bare/x wall':>12}{'bare/x CPU':>11}"
          f"{'RSS x/bare':>11}")
    for k in KINDS:
        m = med[k]
        print(f"{NAMES[k]:<44}{m['seconds']:>8.2f}{m['cpu_s']:>8.2f}{m['rss_mb']:>8.0f}"
              f"{bare['seconds'] / m['seconds']:>12.2f}{bare['cpu_s'] / m['cpu_s']:>11.2f}"
              f"{m['rss_mb'] / bare['rss_mb']:>11.2f}")
    if all("sys_s" in r[k] for r in rounds for k in KINDS):  # results before 2026-12-07 lack them
        print(f"\n{'chain':<44}{'system s':>9}{'of CPU':>8}{'minor faults':>14}{'major':>7}")
        for k in KINDS:
            sys_s, flt, maj = (_median(rounds, k, m) for m in ("sys_s", "minflt", "majflt"))
            print(f"{NAMES[k]:<44}{sys_s:>9.2f}{sys_s / med[k]['cpu_s']:>8.0%}{flt:>14,.0f}{maj:>7,.0f}")
    steps = rounds[0]["floor"]["steps"]
    per_step = {s: statistics.median(r["floor"]["steps"][s] for r in rounds) for s in steps}
    print("floor steps (median wall s): " + ", ".join(f"{s} {v:.2f}" for s, v in per_step.items()))
    if "small" not in rounds[0]:
        return
    small = [r["small"] for r in rounds]
    n, n_small = rounds[0]["spans"], small[0]["spans"]
    print(f"\nfixed cost per night and cost per 1,000 spans (a {n_small:,}-span night against the {n:,}-span one):")
    print(f"{'':<44}{'fixed s':>9}{'fixed CPU':>10}{'per 1k s':>10}{'per 1k CPU':>11}")
    cost = {}
    for k in KINDS:  # a line through the two nights: its intercept is the fixed cost, its slope the cost per span
        at_small = {m: statistics.median(s[k][m] for s in small) for m in ("seconds", "cpu_s")}
        per = {m: (med[k][m] - at_small[m]) / (n - n_small) for m in ("seconds", "cpu_s")}
        fixed = {m: at_small[m] - per[m] * n_small for m in ("seconds", "cpu_s")}
        cost[k] = (fixed, per)
        print(f"{NAMES[k]:<44}{fixed['seconds']:>9.2f}{fixed['cpu_s']:>10.2f}{per['seconds'] * 1e3:>10.3f}"
              f"{per['cpu_s'] * 1e3:>11.3f}")
    for target in (0.35, 0.5):
        for m, label in (("seconds", "wall"), ("cpu_s", "CPU")):
            budget = bare[m] / target
            s_fixed, s_per, f_per = cost["spanrl"][0][m], cost["spanrl"][1][m], cost["floor"][1][m]
            allowed = (budget - s_fixed) / n
            if allowed <= 0:
                verdict = f"spanrl's fixed {s_fixed:.2f} s per night alone exceeds it"
            elif f_per > allowed:
                verdict = (f"after spanrl's fixed {s_fixed:.2f} s, {allowed * 1e6:.1f} us/span are left, less than the "
                           f"floor's {f_per * 1e6:.1f}")
            else:
                verdict = (f"after spanrl's fixed {s_fixed:.2f} s and the floor's {f_per * 1e6:.1f} us/span, "
                           f"{(allowed - f_per) * 1e6:.1f} us/span are left for all the floor leaves out, which "
                           f"takes {(s_per - f_per) * 1e6:.1f} today")
            print(f"at {target}x ({label}): {budget:.2f} s for {n:,} spans (spanrl spends {s_per * 1e6:.1f} us/span); "
                  f"{verdict}")


if __name__ == "__main__":
    main()
