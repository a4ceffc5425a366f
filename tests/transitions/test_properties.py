"""Properties of the builder over random span trees (hypothesis, kept small and fast)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanrl.transitions.build import build_transitions
from spanrl.transitions.config import IngestConfig
from tests.transitions.lakefake import FakeLake, assistant, new_id, user

call_st = st.tuples(
    st.integers(0, 5000),  # start offset
    st.integers(1, 500),  # duration
    st.sampled_from(["root", "sub", "orphan"]),  # where the call hangs
    st.booleans(),  # has a response
)
rollout_st = st.tuples(
    st.lists(call_st, max_size=6),
    st.sampled_from([None, "s1", "s2"]),  # session.id: traces sharing one are one rollout
    st.floats(-1, 1, allow_nan=False),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rollout_st, min_size=1, max_size=4), st.sampled_from(["identical", "discounted", "last", "air"]))
def test_transitions_partition_calls_into_rollouts(rollouts, credit) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        lake = FakeLake(Path(tmp))
        expected_calls = 0
        for i, (calls, session, reward) in enumerate(rollouts):
            tr = new_id(32)
            t = i * 10_000
            attrs = {"session.id": session} if session else {}
            root = lake.span(tr, "invoke_agent a", t, t + 8000, attributes=attrs)
            sub = lake.span(tr, "invoke_agent b", t + 100, t + 6000, root)
            for start, dur, where, has_response in calls:
                parent = {"root": root, "sub": sub, "orphan": new_id()}[where]
                lake.llm_call(tr, t + start, t + start + dur, parent, [user(f"q{i}")],
                              assistant("r") if has_response else None, agent=where)
                expected_calls += has_response
            lake.span(tr, "spanrl.reward", t + 7000, t + 7000, root, attributes={"spanrl.reward": reward})
        con = lake.connect()
        result = build_transitions(IngestConfig(data=lake.data, settle_s=0, rollout_key="session.id",
                                                credit=credit), con=con)
        assert result.rows == expected_calls
        # every transition is one LLM call, in exactly one rollout: the rollout of its trace
        assert con.execute("""SELECT count(*) FROM transitions t JOIN rollouts r
                              ON list_contains(r.trace_ids, t.trace_id) AND r.rollout_id = t.rollout_id""").fetchall() \
            == [(expected_calls,)]
        assert con.execute("SELECT count(DISTINCT (trace_id, span_id)) FROM transitions").fetchall() == [(expected_calls,)]
        # steps are 0..n-1 without gaps, n_steps = the rollout's number of transitions, one last step
        bad = con.execute("""SELECT rollout_id FROM transitions GROUP BY rollout_id
                             HAVING list(step ORDER BY step) <> range(0, count(*))::INTEGER[]
                                 OR min(n_steps) <> count(*) OR max(n_steps) <> count(*)
                                 OR count(*) FILTER (WHERE is_last) <> 1""").fetchall()
        assert bad == []
        if credit == "identical":
            assert con.execute('SELECT count(*) FROM transitions WHERE "return" <> final_reward').fetchall() == [(0,)]
        if credit == "air":  # return = R + the call's own AIR reward (step_credit's model of it)
            assert con.execute('SELECT count(*) FROM transitions WHERE abs("return" - final_reward - step_reward) > 1e-9'
                               ).fetchall() == [(0,)]
        con.close()
