"""Rollout identity, completeness, tree repair and step order on hand-built lakes."""

from __future__ import annotations

from pathlib import Path

from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import IngestConfig
from tests.transitions.lakefake import FakeLake, assistant, new_id, user


def _run(lake: FakeLake, **cfg):
    con = lake.connect()
    result = build_transitions(IngestConfig(data=lake.data, **{"settle_s": 0, **cfg}), con=con)
    return con, result


def _rollout(lake: FakeLake, trace: str, reward: float | None = 1.0, attrs: dict | None = None,
             resource: dict | None = None, prompt: str = "task", t: int = 0, history: list[dict] = ()) -> str:
    root = lake.span(trace, "invoke_agent a", t, t + 1000, attributes=attrs, resource=resource)
    lake.llm_call(trace, t + 10, t + 100, root, [*history, user(prompt)], assistant("a1"), agent="a")
    if reward is not None:
        lake.span(trace, "spanrl.reward", t + 900, t + 900, root, attributes={"spanrl.reward": reward})
    return root


def test_rollout_id_priority_and_multi_trace_session(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    t1, t2, t3, t4 = (new_id(32) for _ in range(4))
    _rollout(lake, t1, attrs={"spanrl.rollout_id": "explicit", "session.id": "s1"})
    _rollout(lake, t2, resource={"agentlightning.rollout_id": "agl-7"}, attrs={"session.id": "s1"})
    _rollout(lake, t3, attrs={"session.id": "s2"}, t=2000)
    _rollout(lake, t4, attrs={"session.id": "s2"}, t=5000)
    con, _ = _run(lake, rollout_key="session.id")
    got = dict(con.execute("SELECT rollout_id, trace_ids FROM rollouts").fetchall())
    assert got["explicit"] == [t1]
    assert got["agl-7"] == [t2]
    assert sorted(got["s2"]) == sorted([t3, t4])  # one rollout over two traces
    steps = con.execute("SELECT trace_id, step, n_steps FROM transition_rows WHERE rollout_id = 's2' "
                        "ORDER BY step").fetchall()
    assert steps == [(t3, 0, 2), (t4, 1, 2)]  # the earlier trace's call first
    # without the key, each trace is its own rollout
    con, _ = _run(lake)
    assert con.execute("SELECT count(*) FROM rollouts").fetchall()[0][0] == 4


def test_completeness_waits_for_root_and_settle(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    done, late, rootless = new_id(32), new_id(32), new_id(32)
    _rollout(lake, done, t=0)
    _rollout(lake, late, t=600_000_000_000)  # ends 10 min after the first: the lake's clock
    missing_root = new_id()
    lake.llm_call(rootless, 10, 100, missing_root, [user("x")], assistant("y"))  # root never arrived
    con, result = _run(lake, settle_s=300)
    complete = dict(con.execute("SELECT rollout_id, complete FROM rollouts").fetchall())
    assert complete == {done: True, late: False, rootless: False}
    assert result.stats["rollouts_waiting"] == 2
    assert {r[0] for r in con.execute("SELECT DISTINCT rollout_id FROM transition_rows").fetchall()} == {done}
    con, _ = _run(lake, settle_s=0)
    assert dict(con.execute("SELECT rollout_id, complete FROM rollouts").fetchall())[late] is True


def test_orphan_reattached_under_tightest_enclosing_span(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent outer", 0, 10_000)
    step = lake.span(tr, "step", 1000, 5000, root)
    lake.llm_call(tr, 6000, 6500, root, [user("q")], assistant("late"), agent="outer")
    # an LLM call whose parent (a lost span) never arrived, inside `step` in time
    orphan = lake.llm_call(tr, 2000, 3000, new_id(), [user("q")], assistant("early"), agent="outer")
    lake.span(tr, "spanrl.reward", 9000, 9000, root, attributes={"spanrl.reward": 1.0})
    con, result = _run(lake)
    assert con.execute("SELECT parent_span_id, repaired FROM _span_tree WHERE span_id = $s",
                       {"s": orphan}).fetchall() == [(step, True)]
    assert result.stats["orphan_spans"] == 1 and result.stats["orphans_reattached"] == 1
    order = con.execute("SELECT response_message FROM transition_rows ORDER BY step").fetchall()
    assert [o[0] for o in order] == ['{"role": "assistant", "content": "early"}',
                                    '{"role": "assistant", "content": "late"}']


def test_tree_order_beats_start_time_for_nested_agents(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent planner", 0, 10_000)
    sub = lake.span(tr, "invoke_agent worker", 100, 5000, root)
    # the worker's call starts after the planner's second call, but the worker span starts earlier
    lake.llm_call(tr, 50, 90, root, [user("plan")], assistant("p1"), agent="planner")
    lake.llm_call(tr, 3000, 4000, sub, [user("work")], assistant("w1"), agent="worker")
    lake.llm_call(tr, 200, 300, root, [user("plan")], assistant("p2"), agent="planner")
    lake.span(tr, "spanrl.reward", 9000, 9000, root, attributes={"spanrl.reward": 1.0})
    con, _ = _run(lake)
    got = [r[0] for r in con.execute("SELECT agent_name FROM transition_rows ORDER BY step").fetchall()]
    assert got == ["planner", "worker", "planner"]  # depth-first: p1, worker subtree, p2 (starts at 200 > 100)


def test_agent_filter_keeps_rewards_of_whole_rollout(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent team", 0, 10_000)
    lake.llm_call(tr, 10, 20, root, [user("q")], assistant("w1"), agent="writer")
    lake.llm_call(tr, 30, 40, root, [user("q")], assistant("c1"), agent="checker")
    lake.llm_call(tr, 50, 60, root, [user("q")], assistant("w2"), agent="rewriter")
    lake.span(tr, "spanrl.reward", 9000, 9000, root, attributes={"spanrl.reward": 0.5})
    con, _ = _run(lake, agent="writer")
    rows = con.execute("SELECT agent_name, step, n_steps, final_reward, is_last FROM transition_rows "
                       "ORDER BY step").fetchall()
    assert rows == [("writer", 0, 2, 0.5, False), ("rewriter", 1, 2, 0.5, True)]
    assert con.execute("SELECT agent_names, n_llm_calls FROM rollouts").fetchall() == [
        (["checker", "rewriter", "writer"], 3)]


def test_missing_reward_drop_or_zero(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    with_r, without = new_id(32), new_id(32)
    _rollout(lake, with_r, reward=1.0)
    _rollout(lake, without, reward=None)
    con, result = _run(lake)
    assert con.execute("SELECT final_reward FROM rollouts WHERE rollout_id = $r", {"r": without}).fetchall() == [(None,)]
    assert {r[0] for r in con.execute("SELECT rollout_id FROM transition_rows").fetchall()} == {with_r}
    assert result.stats["rollouts_without_reward"] == 1
    con, _ = _run(lake, missing_reward="zero", advantage="none")
    rows = dict(con.execute("SELECT rollout_id, final_reward FROM transition_rows").fetchall())
    assert rows == {with_r: 1.0, without: None}


def test_task_identity(tmp_path: Path) -> None:
    lake = FakeLake(tmp_path)
    a, b, c, d = (new_id(32) for _ in range(4))
    _rollout(lake, a, prompt="same question")
    _rollout(lake, b, prompt="same question")
    _rollout(lake, c, prompt="other question", attrs={"spanrl.task_id": "T-9"})
    _rollout(lake, d, prompt="other question", attrs={"dataset.row": "row-3"})
    con, _ = _run(lake, task_key="dataset.row")
    tasks = dict(con.execute("SELECT rollout_id, task_id FROM rollouts").fetchall())
    assert tasks[a] == tasks[b] and tasks[a].startswith("msg:")
    assert tasks[c] == "T-9" and tasks[d] == "row-3"


def test_task_identity_past_worked_examples(tmp_path: Path) -> None:
    """An agent that keeps a worked example in its conversation: the task is the user's request (the last
    user message of the first call), so two questions stay two groups and one question asked twice is one."""
    lake = FakeLake(tmp_path)
    example = [user("What is 1+1?"), assistant("2")]
    a, b, c = (new_id(32) for _ in range(3))
    _rollout(lake, a, prompt="What is 3+4?", history=example)
    _rollout(lake, b, prompt="What is 5+6?", history=example)
    _rollout(lake, c, prompt="What is 3+4?", history=example)
    con, _ = _run(lake)
    tasks = dict(con.execute("SELECT rollout_id, task_id FROM rollouts").fetchall())
    assert tasks[a] != tasks[b] and tasks[a] == tasks[c]


def test_one_trace_holding_several_rollouts(tmp_path: Path) -> None:
    """An eval harness wraps every episode in one outer span: each keyed episode is its own rollout,
    complete once it is settled even though the outer span has not arrived yet."""
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    outer = new_id()  # the harness span: still running, not exported
    for k, reward in enumerate([1.0, 0.0]):
        ep = lake.span(tr, "episode", k * 1000, k * 1000 + 900, outer, attributes={"spanrl.rollout_id": f"ep{k}"})
        lake.llm_call(tr, k * 1000 + 10, k * 1000 + 100, ep, [user(f"q{k}")], assistant("a"), agent="a")
        lake.span(tr, "spanrl.reward", k * 1000 + 800, k * 1000 + 800, ep, attributes={"spanrl.reward": reward})
    con, _ = _run(lake)
    got = con.execute("SELECT rollout_id, trace_ids, n_llm_calls, final_reward, complete FROM rollouts "
                      "ORDER BY rollout_id").fetchall()
    assert got == [("ep0", [tr], 1, 1.0, True), ("ep1", [tr], 1, 0.0, True)]


def test_unkeyed_wrapper_joins_the_traces_only_key(tmp_path: Path) -> None:
    """An HTTP server root above the keyed agent span: the whole trace is the session's rollout."""
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    http = lake.span(tr, "POST /chat", 0, 2000)
    agent = lake.span(tr, "invoke_agent a", 10, 1900, http, attributes={"session.id": "s9"})
    lake.llm_call(tr, 20, 100, agent, [user("q")], assistant("a"), agent="a")
    lake.span(tr, "spanrl.reward", 1950, 1950, http, attributes={"spanrl.reward": 0.5})  # emitted at the root
    con, _ = _run(lake, rollout_key="session.id")
    assert con.execute("SELECT rollout_id, final_reward, complete FROM rollouts").fetchall() == [("s9", 0.5, True)]
