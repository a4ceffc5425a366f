"""Incremental stage 2 equals a from-scratch build (issue 11).

Two data roots get the same span files and feedback files night after night, through stage 1 as a
user's collector leaves them (OTLP/JSON lines): one runs the nightly ``spanrl ingest`` (incremental
stage 2), the other ``spanrl ingest --rebuild`` (every rollout recomputed). After every night both
must hold the same snapshot content hash and the same stage-2 tables, while the incremental root
recomputes only what the night touched: new rollouts, a rollout whose root span arrives late, a
straggler span of an old complete rollout, a rollout that spans two traces arriving on two nights,
late and edited feedback, and feedback for a key that matches nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.transitions.incremental import restrict_lake
from spanrl.transitions.snapshot import latest_manifest, read_snapshot
from spanrl.transitions.tables import current_tables

T0 = 1_767_225_600_000_000_000
S = 1_000_000_000


def _kv(key: str, value) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(tid: str, sid: str, parent: str | None, name: str, start: int, end: int, attrs: dict,
          error: bool = False) -> dict:
    span = {"traceId": tid, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(T0 + start),
            "endTimeUnixNano": str(T0 + end), "attributes": [_kv(k, v) for k, v in attrs.items()],
            "status": {"code": 2, "message": "boom"} if error else {}}
    if parent:
        span["parentSpanId"] = parent
    return span


def _chat(tid: str, parent: str, n: str, i: int, start: int) -> dict:
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"question {n}"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"answer {n}.{i}"}],
                       "finish_reason": "stop"}])
    return _span(tid, os.urandom(8).hex(), parent, "chat m", start, start + S // 2,
                 {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
                  "gen_ai.response.id": f"resp-{n}-{i}", "gen_ai.input.messages": msgs,
                  "gen_ai.output.messages": out})


class Agent:
    """Writes one night's spans as a collector file into every data root given."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.traces: dict[str, tuple[str, str]] = {}  # rollout -> (trace id, root span id)

    def rollout(self, n: str, night: int, reward: float, task: str, *, calls: int = 2, root: bool = True,
                tool_error: bool = False, trace: str | None = None) -> list[dict]:
        tid, rid = trace or os.urandom(16).hex(), os.urandom(8).hex()
        self.traces[n] = (tid, rid)
        t = night * 86_400 * S
        spans = [_chat(tid, rid, n, i, t + i * S) for i in range(calls)]
        spans.append(_span(tid, os.urandom(8).hex(), rid, "execute_tool calc", t + calls * S, t + calls * S + 1000,
                           {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc"}, error=tool_error))
        spans.append(_span(tid, os.urandom(8).hex(), rid, "spanrl.reward", t + 8 * S, t + 8 * S,
                           {"spanrl.reward": reward, "spanrl.task_id": task}))
        if root:
            spans.append(self.root_span(n, night))
        return spans

    def root_span(self, n: str, night: int) -> dict:
        tid, rid = self.traces[n]
        t = night * 86_400 * S
        return _span(tid, rid, None, "invoke_agent calc", t, t + 9 * S,
                     {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc", "spanrl.rollout_id": n})

    def write(self, night: int, spans: list[dict]) -> None:
        line = json.dumps({"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "calc")]},
                                              "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
        for root in self.roots:
            (root / "otel").mkdir(parents=True, exist_ok=True)
            (root / "otel" / f"traces-night-{night}.jsonl").write_text(line + "\n")

    def feedback(self, name: str, rows: list[dict]) -> None:
        for root in self.roots:
            (root / "feedback").mkdir(parents=True, exist_ok=True)
            (root / "feedback" / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _ingest(data: Path, *extra: str) -> dict:
    result = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--settle", "0s", *extra])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return latest_manifest(data)


def _table(data: Path, name: str, order: str) -> list[tuple]:
    files = [str(p) for p in current_tables(data)[0][name]]
    return duckdb.sql(f"SELECT * FROM read_parquet({files!r}, union_by_name = true) ORDER BY {order}").fetchall()


def _same(inc: Path, full: Path) -> dict:
    a, b = latest_manifest(inc), latest_manifest(full)
    assert a["content_hash"] == b["content_hash"] and a["rows"] == b["rows"]
    assert _table(inc, "rollouts", "rollout_id") == _table(full, "rollouts", "rollout_id")
    assert _table(inc, "rewards", "ALL") == _table(full, "rewards", "ALL")
    assert _table(inc, "llm_calls", "trace_id, span_id") == _table(full, "llm_calls", "trace_id, span_id")
    rows = [read_snapshot(d)[0].drop_columns(["snapshot_id"]) for d in (inc, full)]
    assert rows[0].equals(rows[1]) and rows[0].column("advantage").null_count == 0
    return a["stats"]["stage2"]


@pytest.mark.timeout(300)
def test_nightly_incremental_equals_from_scratch(tmp_path: Path) -> None:
    inc, full = tmp_path / "inc", tmp_path / "full"
    agent = Agent([inc, full])

    # night 0: three complete rollouts (one breaks its tool: AIR), one whose root span is late
    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("b", 0, 0.0, "t1", tool_error=True)
                + agent.rollout("c", 0, 0.5, "t2") + agent.rollout("w", 0, 1.0, "t2", root=False))
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert st["mode"] == "full" and st["reason"] == "first build"
    # w waits for its root span, which carries the rollout key: till then it is named by its trace
    assert {r[0] for r in _table(inc, "rollouts", "rollout_id") if not r[-1]} == {agent.traces["w"][0]}

    # night 1: new rollouts, the late root of w, late feedback for a (by rollout) and b (by response id)
    agent.write(1, agent.rollout("d", 1, 0.0, "t1") + agent.rollout("e", 1, 1.0, "t3") + [agent.root_span("w", 0)])
    agent.feedback("day1.jsonl", [{"rollout_id": "a", "value": 0.25, "name": "primary"},
                                  {"response_id": "resp-b-0", "value": 0.75, "name": "primary"}])
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert {r[0] for r in _table(inc, "rollouts", "rollout_id")} == {"a", "b", "c", "d", "e", "w"}
    assert st["mode"] == "incremental"
    assert st["why"]["new lake files"] == 3 and st["why"]["rollouts waiting"] == 1 and st["why"]["feedback changed"] == 2
    assert st["traces_recomputed"] == 5  # d, e, w + a, b (feedback); c untouched
    assert st["segments"] == {"written": 1, "rewritten": 1, "reused": 0, "merged": 0}

    # night 2: a straggler span of the old, complete rollout c; rollout x spans two traces over two nights
    tc, rc = agent.traces["c"]
    straggler = _span(tc, os.urandom(8).hex(), rc, "execute_tool calc", 3 * S, 3 * S + 10,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc"}, error=True)
    agent.write(2, agent.rollout("x", 2, 1.0, "t3") + [straggler] + agent.rollout("f", 2, 0.0, "t4"))
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert st["traces_recomputed"] == 3 and st["segments"]["rewritten"] == 1 and st["segments"]["reused"] == 1

    # night 3: x's second trace (same rollout id, new trace), feedback edited and one matching nothing
    second = agent.rollout("x", 3, 1.0, "t3", calls=1)
    agent.write(3, second)
    agent.feedback("day1.jsonl", [{"rollout_id": "a", "value": 1.0, "name": "primary"},
                                  {"response_id": "resp-b-0", "value": 0.75, "name": "primary"}])
    agent.feedback("day3.jsonl", [{"rollout_id": "nobody", "value": 1.0}])
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert st["mode"] == "incremental" and st["closure_rounds"] == 2  # x's new trace pulled in its first one
    x = [r for r in _table(inc, "rollouts", "rollout_id") if r[0] == "x"]
    assert len(x) == 1 and len(x[0][2]) == 2  # one rollout over both traces
    assert latest_manifest(inc)["stats"]["feedback_unknown_keys"] == 1

    # night 4: brand-new rollouts only, so every lake file the build reads is new and `spans` reads them
    # whole (incremental/spans_new.sql) instead of filtering them by trace: still equal to from scratch
    agent.write(4, agent.rollout("g", 4, 1.0, "t1") + agent.rollout("h", 4, 0.0, "t4"))
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert st["mode"] == "incremental" and st["traces_recomputed"] == 2 and st["why"] == {"new lake files": 2}

    # a night with nothing new changes nothing: same snapshot, no table rewritten
    before = latest_manifest(inc)["snapshot_id"]
    _ingest(inc)
    assert latest_manifest(inc)["snapshot_id"] == before


def test_config_change_is_an_announced_full_rebuild(tmp_path: Path) -> None:
    agent = Agent([tmp_path])
    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("b", 0, 0.0, "t1"))
    _ingest(tmp_path)
    result = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--settle", "0s", "--credit", "air"])
    assert result.exit_code == 0, result.output
    st = latest_manifest(tmp_path)["stats"]["stage2"]
    assert st["mode"] == "full" and "credit" in st["reason"]
    assert "full rebuild" in result.output and "credit" in result.output
    # the build says which conventions read its calls (only those some span used) and how long its rows took
    assert st["conventions"] == ["genai_latest"] and st["seconds"]["rows"] > 0
    assert "LLM-call conventions read" in result.output
    # tables stored by an older release (state without this format) are rebuilt, not continued
    import spanrl.transitions.tables as tables

    state = tables.tables_dir(tmp_path) / tables.load_state(tmp_path)["build_id"] / "state.json"
    state.write_text(json.dumps({k: v for k, v in json.loads(state.read_text()).items() if k != "format"}))
    agent.write(1, agent.rollout("c", 1, 1.0, "t1"))
    _ingest(tmp_path, "--credit", "identical")
    st = latest_manifest(tmp_path)["stats"]["stage2"]
    assert st["mode"] == "full" and st["reason"] == "older stage-2 layout"


def test_retention_drops_old_rollouts_and_stays_equal_to_from_scratch(tmp_path: Path) -> None:
    """--keep-days removes old lake partitions: their traces are recomputed from what remains, so the
    nightly root still equals a from-scratch build of the retained lake, and older snapshots keep
    their rows."""
    inc, full = tmp_path / "inc", tmp_path / "full"
    agent = Agent([inc, full])
    for night, names in enumerate((["a", "b"], ["c", "d"], ["e", "f"])):
        agent.write(night, [s for n in names for s in agent.rollout(n, night, float(night % 2), f"t{night}")])
        _ingest(inc), _ingest(full, "--rebuild")
    first = latest_manifest(inc)
    _ingest(inc, "--keep-days", "1"), _ingest(full, "--rebuild", "--keep-days", "1")
    st = _same(inc, full)
    assert st["mode"] == "incremental" and st["why"] == {"lake files gone": 2}
    assert {r[0] for r in _table(inc, "rollouts", "rollout_id")} == {"c", "d", "e", "f"}
    old, _ = read_snapshot(inc, first["snapshot_id"])  # an older snapshot still reads whole
    assert set(old.column("rollout_id").to_pylist()) == {"a", "b", "c", "d", "e", "f"}


def test_segments_of_one_size_tier_are_merged_and_the_hash_stays(tmp_path: Path, monkeypatch) -> None:
    """Months of nights must not leave hundreds of segments: segments of a similar size are merged
    (here every 2, instead of 16), rows untouched, so the snapshot hash is a rebuild's."""
    import spanrl.transitions.tables as tables

    monkeypatch.setattr(tables, "MERGE_FANOUT", 2)
    inc, full = tmp_path / "inc", tmp_path / "full"
    agent = Agent([inc, full])
    counts = []
    for night in range(3):
        agent.write(night, [s for n in (f"a{night}", f"b{night}") for s in agent.rollout(n, night, float(night), "t")])
        _ingest(inc), _ingest(full, "--rebuild")
        st = _same(inc, full)
        counts.append(len(tables.load_state(inc)["segments"]))
        if night == 1:
            assert st["segments"]["merged"] == 2
    assert counts == [1, 1, 2]  # night 1 merged two 2-trace segments into one of 4 (the next tier)


@pytest.mark.parametrize("point", ["part", "before_commit"])
def test_kill_9_in_an_incremental_build_then_rerun_equals_from_scratch(tmp_path: Path, point: str) -> None:
    """kill -9 while a night's stage 2 writes (``part``: the tables' draft; ``before_commit``: tables
    published, snapshot not): the lake already holds the night's spans, so the next run must pick
    them up from the lake itself and end where a from-scratch build does."""
    import subprocess
    import sys

    inc, full = tmp_path / "inc", tmp_path / "full"
    agent = Agent([inc, full])
    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("b", 0, 0.0, "t1"))
    _ingest(inc), _ingest(full, "--rebuild")
    agent.write(1, agent.rollout("c", 1, 1.0, "t1") + agent.rollout("d", 1, 0.5, "t2"))
    crashed = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(inc), "--settle", "0s"],
                             env={**os.environ, "SPANRL_TEST_CRASH_AT": point}, capture_output=True, text=True,
                             timeout=300)
    assert crashed.returncode == 137, crashed.stderr[-2000:]
    _ingest(inc), _ingest(full, "--rebuild")
    st = _same(inc, full)
    assert st["mode"] == "incremental" and st["why"].get("new lake files") == (2 if point == "part" else None)
    assert {r[0] for r in _table(inc, "rollouts", "rollout_id")} == {"a", "b", "c", "d"}


def test_the_reuse_key_covers_the_conventions_registry_and_its_probes(monkeypatch) -> None:
    import spanrl.ingest.views as views
    from spanrl.transitions.tables import reuse_key

    before = reuse_key({})
    monkeypatch.setitem(views.CONVENTION_PROBES, "litellm", ("false", None))
    assert reuse_key({}) != before


def test_the_summary_prints_data_as_text_not_markup(capsys) -> None:
    from spanrl.transitions.summary import BuildResult, print_summary

    reason = "changed: the stage-2 code (spanrl release, SQL or [[conventions]])"
    stats = {"stage2": {"mode": "full", "reason": reason, "traces_recomputed": 3},
             "rewards_by_source": {"[bold]x[/bold]": 1}}
    print_summary(BuildResult("empty", None, None, 0, stats))
    out = " ".join(capsys.readouterr().out.split())
    assert "[[conventions]]" in out and "[bold]x[/bold] 1" in out


def test_the_summary_names_replies_cut_at_the_token_limit(capsys) -> None:
    from spanrl.transitions.summary import BuildResult, print_summary

    print_summary(BuildResult("empty", None, None, 0, {"llm_calls": 9, "llm_calls_cut": 4}))
    out = " ".join(capsys.readouterr().out.split())
    assert "replies cut at the token limit" in out and "4 of 9 LLM calls stopped at max_tokens" in out
    print_summary(BuildResult("empty", None, None, 0, {"llm_calls": 9, "llm_calls_cut": 0}))
    assert "cut at the token limit" not in capsys.readouterr().out


def test_an_incremental_run_reads_new_lake_files_whole_and_filters_older_ones_by_trace(tmp_path: Path) -> None:
    """restrict_lake: when every span file read is new, `spans` reads them as they are (each of their
    traces is a seed, so the by-trace filter would keep every row); one older file among them, which
    also holds traces nobody recomputes, and `spans` keeps the touched traces' rows only."""
    part = tmp_path / "lake" / "spans" / "date=2026-01-01"
    part.mkdir(parents=True)
    for name, traces in (("new.parquet", ["t1", "t2"]), ("old.parquet", ["t1", "t3"])):
        duckdb.sql(f"COPY (SELECT unnest({traces}) AS trace_id) TO '{part / name}' (FORMAT parquet)")
    new, old = "lake/spans/date=2026-01-01/new.parquet", "lake/spans/date=2026-01-01/old.parquet"
    con = duckdb.connect()
    con.execute("CREATE VIEW logs AS SELECT NULL::VARCHAR AS trace_id WHERE false")  # the lake's (empty) logs
    con.execute("CREATE TEMP TABLE _touched AS SELECT unnest(['t1', 't2']) AS trace_id")

    def spans_view() -> tuple[str, list[str]]:
        sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'spans'").fetchall()[0][0]
        return sql, sorted(r[0] for r in con.sql("SELECT trace_id FROM spans").fetchall())

    restrict_lake(con, tmp_path, [new], new_files=[new])
    sql, traces = spans_view()
    assert "WHERE (true OR" in sql.replace("TRUE", "true") and traces == ["t1", "t2"]  # the filter folded away
    restrict_lake(con, tmp_path, [new, old], new_files=[new])
    sql, traces = spans_view()
    assert "WHERE (false OR" in sql.replace("FALSE", "false") and traces == ["t1", "t1", "t2"]  # t3: untouched
