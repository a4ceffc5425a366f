"""Stage 2 on real telemetry: the real openai client + a real instrumentation library, OTLP to the
embedded collector (A's helper), stage 1 into the lake (B), then `spanrl ingest` / `transitions build`.

One agent process runs a plan of 14 rollouts (every scenario and reward form, every span exported
twice), three more run a small plan under the other instrumentations; a second collector run adds the second half of a session-keyed rollout in another file,
plus delayed feedback, and a second ingest picks both up.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.transitions import read_snapshot
from tests.helpers.collector import running_collector
from tests.helpers.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]

PHASE1 = [
    {"scenario": "single", "task_id": "T-single", "reward": 1.0, "reward_form": "emit"},  # 0
    {"scenario": "tools", "task_id": "T-tools", "reward": 0.8, "reward_form": "agl_annotation"},  # 1
    {"scenario": "dynamic", "rounds": 3, "reward": 0.3, "reward_form": "agl_v02"},  # 2
    {"scenario": "two_agents", "agent": "team", "reward": 0.6, "reward_form": "event"},  # 3
    {"scenario": "nested", "agent": "outer", "reward": 0.4, "reward_form": "attribute"},  # 4
    {"scenario": "orphan", "reward": 0.9, "reward_form": "genai_eval"},  # 5
    {"scenario": "tools", "tool_error": True, "reward": 0.2, "reward_form": "openinference_eval"},  # 6
    {"scenario": "single", "question": "feedback later", "reward_form": "none"},  # 7
    *[{"scenario": "single", "task_id": "T-group", "question": "grouped", "reward": float(i % 2)}
      for i in range(4)],  # 8..11
    {"scenario": "single", "session": "sess-1", "question": "first half", "reward_form": "none"},  # 12
    {"scenario": "engine", "question": "exact tokens", "reward": 0.5},  # 13
]
PHASE2 = [{"scenario": "single", "session": "sess-1", "question": "second half", "reward": 1.0}]


# The same small plan under the other instrumentations (own processes: they patch the same client):
# openai-v2's default mode (content in log records), OpenInference, OpenLLMetry.
OTHERS = ["openai-v2", "openinference", "traceloop"]


def _other_plan(inst: str) -> list[dict]:
    return [{"scenario": "tools", "tool_error": True, "reward": 0.5, "rollout_id": f"{inst}-tools",
             "task_id": f"{inst}-tools"},
            {"scenario": "two_agents", "agent": "team", "reward": 1.0, "rollout_id": f"{inst}-team",
             "task_id": f"{inst}-team"}]


def _run_agents(data: Path, plans: dict[str, list[dict]], fake: FakeOpenAI, duplicate: bool) -> list[dict]:
    """One agent process per instrumentation, all at once, into one collector; the rollouts of the
    first plan (in order) are returned."""
    procs = []
    with running_collector(data) as ep:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ep.http}
        for inst, plan in plans.items():
            plan_file = data.parent / f"plan-{data.name}-{inst}.json"
            plan_file.write_text(json.dumps(plan))
            args = [sys.executable, "-m", "tests.transitions.rl_agent", "--base-url", fake.url,
                    "--plan", str(plan_file), "--instrumentation", inst] + (["--duplicate"] if duplicate else [])
            procs.append(subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            outs.append(out)
    return [json.loads(line) for line in outs[0].splitlines()]


def _spanrl(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory):
    """Phase 1 ingested once; tests read its first snapshot (kept aside) and then phase 2."""
    base = tmp_path_factory.mktemp("real")
    data = base / "data"
    with FakeOpenAI() as fake:
        runs = _run_agents(data, {"openai-v2-latest": PHASE1, **{i: _other_plan(i) for i in OTHERS}}, fake,
                           duplicate=True)
        out1 = _spanrl("ingest", "--data", str(data), "--settle", "0s", "--rollout-key", "session.id",
                       "--credit", "air")  # AIR reaches the advantage (the default, identical, records it only)
        first, manifest1 = read_snapshot(data)
        # phase 2: another collector run writes another file; moved in as a rotated backup
        other = base / "other"
        runs2 = _run_agents(other, {"openai-v2-latest": PHASE2}, fake, duplicate=False)
        (other / "otel" / "traces.jsonl").rename(data / "otel" / "traces-2030-01-01T00-00-00.000.jsonl")
    return {"data": data, "runs": runs, "runs2": runs2, "first": first, "manifest1": manifest1, "out1": out1}


def _by_rollout(table) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        out.setdefault(row["trace_id"], []).append(row)
    return out


def test_first_snapshot_shapes_rewards_and_steps(lake) -> None:
    rows = _by_rollout(lake["first"])
    runs = lake["runs"]
    trace = [r["trace_id"] for r in runs]
    # rollouts without reward (7, and the first half of the session) wait out of the snapshot
    assert {trace[i] for i in range(14) if i not in (7, 12)} <= set(rows)
    assert len(rows) == 12 + 2 * len(OTHERS)
    for i in set(range(14)) - {7, 12}:
        steps = rows[trace[i]]
        assert [s["step"] for s in steps] == list(range(runs[i]["calls"])), i  # duplicates exported twice: kept once
        assert {s["n_steps"] for s in steps} == {runs[i]["calls"]}
        assert steps[-1]["is_last"] and not any(s["is_last"] for s in steps[:-1])
    finals = {i: rows[trace[i]][0]["final_reward"] for i in (0, 1, 2, 3, 4, 5, 6)}
    assert finals == {0: 1.0, 1: 0.8, 2: 0.3, 3: 0.6, 4: 0.4, 5: 0.9, 6: 0.2}
    # air credit: every call carries the rollout's return plus its own AIR reward;
    # prompts/responses are OpenAI messages
    for steps in rows.values():
        assert [s["return"] for s in steps] == pytest.approx([steps[0]["final_reward"] + s["step_reward"] for s in steps])
        assert json.loads(steps[0]["response_message"])["role"] == "assistant"
        assert any(m["role"] == "user" for m in json.loads(steps[0]["prompt_messages"]))
    engine = rows[trace[13]][0]  # token ids from the engine's span, joined to the client's call
    assert engine["token_source"] == "engine" and engine["prompt_token_ids"] == [101, 102, 103]
    assert engine["response_token_ids"] == [7, 8] and engine["response_logprobs"] == [-0.25, -0.5]
    assert rows[trace[0]][0]["token_source"] == "text" and rows[trace[0]][0]["prompt_token_ids"] is None
    stats = lake["manifest1"]["stats"]
    assert stats["rewards_by_source"]["event"] == 2 and stats["rewards_by_source"]["attribute"] == 2
    assert stats["orphan_spans"] == 1 and stats["orphans_reattached"] == 1
    assert stats["rollouts_without_reward"] == 2
    assert "rollouts complete / waiting" in lake["out1"] and str(lake["data"] / "transitions") in lake["out1"]


def test_air_tool_error_hits_the_asking_call(lake) -> None:
    steps = _by_rollout(lake["first"])[lake["runs"][6]["trace_id"]]
    assert [s["step_reward"] for s in steps] == [pytest.approx(-0.2), 0.0]
    assert lake["manifest1"]["stats"]["air_hits_by_rule"] == {"tool_error": 1 + len(OTHERS)}


def test_group_and_batch_advantages(lake) -> None:
    rows = _by_rollout(lake["first"])
    trace = [r["trace_id"] for r in lake["runs"]]
    group = [rows[trace[i]][0]["advantage"] for i in range(8, 12)]
    sd = math.sqrt(1 / 3)
    assert group == pytest.approx([-0.5 / (sd + 1e-6), 0.5 / (sd + 1e-6)] * 2)
    # credit air puts AIR into the statistics: each rollout's reward plus its AIR rewards
    rewards = [rows[t][0]["final_reward"] + sum(s["step_reward"] for s in rows[t]) for t in rows]
    assert sorted(rewards) != sorted(rows[t][0]["final_reward"] for t in rows)  # rollout 6's tool error counts
    mean = sum(rewards) / len(rewards)
    bsd = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1))
    single = rows[trace[0]][0]  # task seen once: batch baseline
    assert single["step_reward"] == 0 and single["advantage"] == pytest.approx((1.0 - mean) / (bsd + 1e-6))
    # rollouts 2..6 ask the same first question without a task id: one task, by message hash
    hashed = {rows[trace[i]][0]["task_id"] for i in range(2, 7)}
    assert len(hashed) == 1 and hashed.pop().startswith("msg:")
    assert lake["manifest1"]["stats"]["advantage"]["groups"] == 2


def test_agents_nesting_and_orphan_order(lake) -> None:
    rows = _by_rollout(lake["first"])
    trace = [r["trace_id"] for r in lake["runs"]]
    assert [s["agent_name"] for s in rows[trace[3]]] == ["writer", "checker", "writer"]
    assert [s["agent_name"] for s in rows[trace[4]]] == ["outer", "inner", "innermost", "outer"]
    orphan = rows[trace[5]]
    assert "orphan call" in orphan[1]["prompt_messages"]


def test_agent_filter_and_second_ingest(lake) -> None:
    data = str(lake["data"])
    out = _spanrl("transitions", "build", "--data", data, "--settle", "0s", "--agent", "^writer$",
                  "--rollout-key", "session.id", "--credit", "discounted", "--gamma", "0.5", "--advantage", "none")
    assert "snapshot" in out
    changed = next(line for line in out.splitlines() if "stage-2 config changed" in line)
    assert all(k in changed for k in ("agent", "credit", "gamma", "advantage")), changed
    table, _ = read_snapshot(data)
    assert set(table["agent_name"].to_pylist()) == {"writer"}
    team = _by_rollout(table)[lake["runs"][3]["trace_id"]]
    assert [(r["step"], r["n_steps"], r["final_reward"]) for r in team] == [(0, 2, 0.6), (1, 2, 0.6)]
    assert [r["return"] for r in team] == pytest.approx([0.3, 0.6])  # gamma^(T-1-t) * R, no AIR here
    assert [r["advantage"] for r in team] == pytest.approx([0.3, 0.6])  # --advantage none
    assert table.num_rows == 2 * (1 + len(OTHERS))  # every team rollout, writer calls only
    # feedback arrives (by response id, plus one unknown key) and the session's second half lands in a new file
    con = duckdb.connect()
    resp = con.execute("SELECT attributes->>'gen_ai.response.id' FROM read_parquet($g) WHERE trace_id = $t "
                       "AND attributes->>'gen_ai.response.id' IS NOT NULL",
                       {"g": f"{data}/lake/spans/*/*.parquet", "t": lake["runs"][7]["trace_id"]}).fetchall()[0][0]
    (lake["data"] / "feedback").mkdir()
    (lake["data"] / "feedback" / "late.jsonl").write_text(
        json.dumps({"response_id": resp, "value": 0.7}) + "\n" + json.dumps({"trace_id": "f" * 32, "value": 1}) + "\n")
    out = _spanrl("ingest", "--data", data, "--settle", "0s", "--rollout-key", "session.id", "--credit", "air")
    assert "feedback with unknown key" in out and "trace_id=" + "f" * 32 in out
    table, manifest = read_snapshot(data)
    rows = _by_rollout(table)
    assert rows[lake["runs"][7]["trace_id"]][0]["final_reward"] == 0.7
    session = [r for r in table.to_pylist() if r["rollout_id"] == "sess-1"]
    assert [r["step"] for r in session] == [0, 1] and {r["n_steps"] for r in session} == {2}
    assert [r["trace_id"] for r in session] == [lake["runs"][12]["trace_id"], lake["runs2"][0]["trace_id"]]
    assert len(session[0]["source_files"]) == 2 and session[0]["final_reward"] == 1.0
    # unchanged lake + config: no duplicate snapshot
    out = _spanrl("transitions", "build", "--data", data, "--settle", "0s", "--rollout-key", "session.id",
                  "--credit", "air")
    assert "unchanged" in out
    assert read_snapshot(data)[1]["snapshot_id"] == manifest["snapshot_id"]
    # the same rollouts and rewards are plain views for `spanrl sql`, with the config the snapshot was
    # built with (--rollout-key was a flag: no spanrl.toml says it; a trace-keyed view would count 21)
    assert not (lake["data"] / "spanrl.toml").exists()
    out = _spanrl("sql", "--data", data, "--format", "csv",
                  "select count(*) filter (where complete), count(*) filter (where final_reward is null), "
                  "(select count(*) from rewards where source = 'feedback') from rollouts")
    # 14 + 6 rollouts (21 traces), all rewarded; 2 feedback rows
    assert out.strip().splitlines()[-1] == f"{14 + 2 * len(OTHERS)},0,2"



def test_other_instrumentations_give_the_same_transitions(lake) -> None:
    """The same agent under openai-v2 (log-record content), OpenInference and OpenLLMetry gives the
    same steps, agents, AIR hit and rewards."""
    rows: dict[str, list[dict]] = {}
    for row in lake["first"].to_pylist():
        rows.setdefault(row["rollout_id"], []).append(row)
    for inst in OTHERS:
        tools, team = rows[f"{inst}-tools"], rows[f"{inst}-team"]
        assert [(r["step"], r["step_reward"], r["final_reward"]) for r in tools] == [(0, -0.2, 0.5), (1, 0.0, 0.5)], inst
        assert json.loads(tools[0]["response_message"])["tool_calls"][0]["function"]["name"] == "get_weather", inst
        assert [r["agent_name"] for r in team] == ["writer", "checker", "writer"], inst
