"""Every reward encoding, primary-reward choice, delayed feedback and AIR rules (hand-built lakes)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spanrl.errors import InputError
from spanrl.transitions import read_snapshot
from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import make_ingest_config
from tests.transitions.lakefake import FakeLake, assistant, new_id, user


def _run(lake: FakeLake, **cfg):
    con = lake.connect()
    config = make_ingest_config(data=lake.data, settle_s=0, **cfg)
    return con, build_transitions(config, con=con)


def _agent(lake: FakeLake, trace: str, t: int = 0, response_id: str | None = None) -> tuple[str, str]:
    root = lake.span(trace, "invoke_agent a", t, t + 10_000)
    call = lake.llm_call(trace, t + 10, t + 100, root, [user(f"q-{trace}")], assistant("a"), agent="a",
                         response_id=response_id)
    return root, call


def test_every_explicit_reward_encoding(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root, call = _agent(lake, tr)
    lake.span(tr, "spanrl.reward", 200, 200, root, attributes={"spanrl.reward": 0.1, "spanrl.reward.name": "fmt"})
    lake.span(tr, "judge", 300, 310, root, attributes={"spanrl.reward": "0.2"})
    lake.span(tr, "agentlightning.annotation", 400, 400, root, attributes={
        "agentlightning.reward.0.name": "accuracy", "agentlightning.reward.0.value": 0.9,
        "agentlightning.reward.1.name": "length", "agentlightning.reward.1.value": 0.3})
    lake.span(tr, "agentlightning.reward", 500, 500, root, attributes={"reward": True})
    lake.span(tr, "eval", 600, 610, root, events=[
        {"name": "gen_ai.evaluation.result", "time_ns": lake.spans[0]["start_ns"] + 605,
         "attributes": {"gen_ai.evaluation.name": "helpful", "gen_ai.evaluation.score.value": 0.7}},
        {"name": "spanrl.reward", "time_ns": lake.spans[0]["start_ns"] + 606, "attributes": {"spanrl.reward": -1}}])
    lake.span(tr, "llm-eval", 700, 710, root, attributes={
        "evaluations.0.evaluation.name": "correct", "evaluations.0.evaluation.score": 0.25})
    lake.log_event(tr, root, 800, "gen_ai.evaluation.result",
                   {"gen_ai.evaluation.name": "logged", "gen_ai.evaluation.score.value": 0.05})
    con, _ = _run(lake)
    got = sorted(con.execute("SELECT source, name, value, is_primary FROM rewards WHERE source <> 'air'").fetchall())
    assert got == sorted([
        ("span", "fmt", 0.1, False), ("attribute", "reward", 0.2, False),
        ("span", "accuracy", 0.9, True), ("span", "length", 0.3, False), ("span", "primary", 1.0, True),
        ("event", "helpful", 0.7, False), ("event", "reward", -1.0, False),
        ("attribute", "correct", 0.25, False), ("event", "logged", 0.05, False)])
    # primary rewards win over later ones; the last primary (v0.2 span at 500) beats the annotation at 400
    assert con.execute("SELECT final_reward FROM rollouts").fetchall() == [(1.0,)]


def test_last_explicit_reward_when_no_primary(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root, _ = _agent(lake, tr)
    lake.span(tr, "spanrl.reward", 900, 900, root, attributes={"spanrl.reward": 0.4})
    lake.span(tr, "spanrl.reward", 300, 300, root, attributes={"spanrl.reward": 0.8})
    con, _ = _run(lake)
    assert con.execute("SELECT final_reward FROM rollouts").fetchall() == [(0.4,)]


def test_feedback_files_all_keys_late_arrival_and_unknown(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    a, b, c = new_id(32), new_id(32), new_id(32)
    _agent(lake, a)
    _agent(lake, b)
    _agent(lake, c, response_id="chatcmpl-42")
    fb = tmp_path / "feedback"
    fb.mkdir()
    (fb / "thumbs.jsonl").write_text(json.dumps({"rollout_id": a, "value": 1, "name": "thumbs"}) + "\n"
                                     + json.dumps({"rollout_id": "nobody", "value": 0}) + "\n")
    con, first = _run(lake)
    assert first.stats["feedback_unknown_keys"] == 1
    assert first.stats["feedback_unknown"] == [f"{fb / 'thumbs.jsonl'}:2 rollout_id=nobody"]
    assert con.execute("SELECT count(*) FROM rewards WHERE rollout_id IS NULL").fetchall() == [(1,)]
    assert {r[0] for r in con.execute("SELECT rollout_id FROM transition_rows").fetchall()} == {a}
    # feedback for the other two arrives after the first snapshot: by trace id (CSV), by response id (Parquet)
    (fb / "late.csv").write_text(f"trace_id,value,ts\n{b},0.5,2024-01-01T00:00:00Z\n")
    pq.write_table(pa.table({"response_id": ["chatcmpl-42"], "value": [0.25]}), fb / "resp.parquet")
    con, second = _run(lake)
    assert second.status == "written" and second.snapshot_id != first.snapshot_id
    table, manifest = read_snapshot(tmp_path)
    assert dict(zip(table["rollout_id"].to_pylist(), table["final_reward"].to_pylist(), strict=True)) == {a: 1.0, b: 0.5, c: 0.25}
    assert str(fb / "late.csv") in manifest["source_files"]
    target = con.execute("SELECT target_span_id FROM rewards WHERE source = 'feedback' AND value = 0.25").fetchall()
    assert target == [(lake.llm[2]["span_id"],)]


@pytest.mark.parametrize("line, problem", [
    ('{"value": 1}', "no key"),
    ('{"rollout_id": "r", "value": "good"}', "is not a number"),
    ('{"rollout_id": "r", "value": 1, "ts": "yesterday"}', "neither ISO-8601"),
])
def test_bad_feedback_row_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    lake = FakeLake(tmp_path)
    _agent(lake, new_id(32))
    (tmp_path / "feedback").mkdir()
    path = tmp_path / "feedback" / "f.jsonl"
    path.write_text('{"rollout_id": "x", "value": 1}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"f\.jsonl:2: .*{problem}"):
        _run(lake)


TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {
    "type": "object", "properties": {"x": {"type": "integer"}, "op": {"type": "string"}},
    "required": ["x"], "additionalProperties": False}}}]


def _tool_rollout(lake: FakeLake, args: str, status: str = "UNSET", events: list | None = None) -> tuple[str, str]:
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent a", 0, 10_000, attributes={"gen_ai.agent.name": "a"})
    ask = lake.llm_call(tr, 10, 100, root, [user(f"q{tr}")], {"role": "assistant", "tool_calls": []},
                        agent="a", tools=TOOLS)
    lake.tool_call(tr, 110, 150, root, ask, "calc", args, status=status, events=events)
    lake.llm_call(tr, 200, 300, root, [user(f"q{tr}"), assistant("r")], assistant("done"), agent="a")
    lake.span(tr, "spanrl.reward", 900, 900, root, attributes={"spanrl.reward": 1.0})
    return tr, ask


@pytest.mark.parametrize("args, valid", [
    ('{"x": 1}', True), ('{"x": 1, "op": "add"}', True), ('{"x": "1"}', False), ('{"op": "add"}', False),
    ('{"x": 1, "y": 2}', False), ("{not json", False), ("[1]", False),
])
def test_air_bad_arguments_against_declared_schema(tmp_path: Path, args: str, valid: bool) -> None:
    lake = FakeLake(tmp_path)
    _, ask = _tool_rollout(lake, args)
    con, _ = _run(lake)
    hits = con.execute("SELECT name, value, target_span_id FROM rewards WHERE source = 'air'").fetchall()
    assert hits == ([] if valid else [("bad_tool_arguments", -0.5, ask)])


def test_air_defaults_credit_the_asking_call(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    exc = {"name": "exception", "time_ns": 0, "attributes": {"exception.type": "ValueError"}}
    _, ask_err = _tool_rollout(lake, '{"x": 1}', status="ERROR", events=[exc])
    # an exception in an agent step (not a tool): aimed at the latest call that ended before it
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent a", 0, 10_000)
    c1 = lake.llm_call(tr, 10, 100, root, [user("z")], assistant("1"), agent="a")
    lake.span(tr, "invoke_agent sub", 150, 400, root, attributes={"gen_ai.operation.name": "invoke_agent"},
              events=[{**exc, "time_ns": lake.spans[0]["start_ns"] + 160}])
    lake.llm_call(tr, 500, 600, root, [user("z")], assistant("2"), agent="a")  # same prompt again: a retry
    lake.span(tr, "spanrl.reward", 900, 900, root, attributes={"spanrl.reward": 0.0})
    con, result = _run(lake)
    hits = sorted(con.execute("SELECT name, target_span_id FROM rewards WHERE source = 'air'").fetchall())
    assert hits == sorted([("tool_error", ask_err), ("exception", c1), ("retried_llm_call", c1)])
    assert result.stats["air_hits_by_rule"] == {"exception": 1, "retried_llm_call": 1, "tool_error": 1}
    steps = dict(con.execute("SELECT span_id, step_reward FROM transition_rows").fetchall())
    assert steps[ask_err] == pytest.approx(-0.2) and steps[c1] == pytest.approx(-0.3)


def test_air_rules_from_spanrl_toml(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    _, ask = _tool_rollout(lake, '{"x": 1}')
    (tmp_path / "spanrl.toml").write_text(
        '[air]\ndefaults = false\n[[air.rules]]\nname = "used_calc"\n'
        'when = "is_tool AND tool_name = \'calc\'"\nvalue = 0.3\n')
    con, result = _run(lake)
    assert con.execute("SELECT name, value, target_span_id FROM rewards WHERE source = 'air'").fetchall() == [
        ("used_calc", 0.3, ask)]
    assert result.stats["air_hits_by_rule"] == {"used_calc": 1}
    (tmp_path / "spanrl.toml").write_text('[[air.rules]]\nname = "typo"\nwhen = "is_tol"\nvalue = 1\n')
    with pytest.raises(InputError, match="AIR rule 'typo'"):
        _run(lake)


def test_discounted_credit_adds_air_reward_to_go(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    _, ask = _tool_rollout(lake, '{"x": 1}', status="ERROR")
    _run(lake, credit="discounted", gamma=0.5, advantage="none")
    snap, _ = read_snapshot(lake.data)  # the advantage is filled by the snapshot's reader
    rows = duckdb.sql('SELECT step, step_reward, "return", advantage FROM snap ORDER BY step').fetchall()
    # T = 2, R = 1: step 0 = 0.5 * 1 + (-0.2), step 1 = 1
    assert rows[0][:2] == (0, pytest.approx(-0.2)) and rows[0][2] == pytest.approx(0.3)
    assert rows[1][2] == pytest.approx(1.0) and rows[0][3] == pytest.approx(rows[0][2])
