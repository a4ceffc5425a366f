"""``spanrl demo --quick`` end to end on the tiny model: every stage runs, every file appears.

The tiny random model does not learn anything; this checks the plumbing: collector, agent
(plain openai SDK + OTel instrumentation, traceparent to the server), serve, ingest, train, the
adapter hot-reload, the held-out split kept out of training, the report, and a clean shutdown.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from spanrl.transitions.schema import TRANSITION_SCHEMA
from spanrl.transitions.snapshot import read_snapshot, write_snapshot
from tests.helpers.tiny_model import make_tiny_model

ROOT = Path(__file__).resolve().parents[2]  # the repository


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
@pytest.mark.timeout(660)  # a hang guard, not a speed check: ~65 s on 2 free cores, 5x that on a loaded machine
def test_demo_quick_runs_every_stage(tmp_path: Path) -> None:
    model = make_tiny_model(tmp_path / "tiny")
    data = tmp_path / "data"
    env = {**os.environ, "COLUMNS": "200"}
    # the preset exactly as a user gets it: --quick trains with RL (pg + air credit), which learns from
    # failures too, so a random tiny model that never answers right still yields an adapter
    proc = subprocess.run([sys.executable, "-m", "spanrl", "demo", "--quick", "--data", str(data), "--model", str(model)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    # every stage left its files
    assert list((data / "otel").glob("traces*.jsonl"))
    assert list((data / "lake" / "spans").rglob("*.parquet"))
    assert (data / "transitions" / "LATEST").is_file()
    adapter = json.loads((data / "adapters" / "cycles.jsonl").read_text().splitlines()[0])["cycle_id"]
    assert (data / "adapters" / adapter / "adapter_model.safetensors").is_file()
    assert len((data / "adapters" / "cycles.jsonl").read_text().splitlines()) == 1
    for path in ("eval/cycle-0.jsonl", "eval/cycle-1.jsonl", "eval/val-0.jsonl", "eval/val-candidate-0.jsonl", "eval/gate-0.json",
                 "demo/rollouts/cycle-0.jsonl", "report.png", "report.html"):
        assert (data / path).is_file(), path
    # every cycle recorded as it ended; the candidate scored on validation and, the tiny model scoring
    # 0 on both, kept by --quick's gate (promote only on a "better" verdict, as --if-better), so LATEST
    # stays the base model (issue 31: it used to print "promoted" at 0.000 vs 0.000)
    record = [json.loads(x) for x in (data / "demo" / "cycles.jsonl").read_text().splitlines()]
    assert [r["cycle"] for r in record] == [0, 1] and record[0]["method"] == "rl"
    assert record[0]["candidate"] == adapter and record[0]["promoted"] is False and record[1]["policy"] == "base"
    assert record[0]["gate"] == "no detectable difference" and "kept (no difference" in proc.stdout
    assert not (data / "adapters" / "LATEST").exists()
    # off a terminal: one line per phase and step, with counts and elapsed seconds
    assert re.search(r"eval rollouts: done, 4/4 in \d+s", proc.stdout), proc.stdout
    assert re.search(r"ingest \(span files -> lake -> snapshot\): done, 1/1 in \d+s", proc.stdout)
    assert "--credit" in record[0]["ingest_args"] and "air" in record[0]["ingest_args"]
    assert [json.loads(x)["split"] for x in (data / "eval" / "cycle-0.jsonl").read_text().splitlines()] == ["eval"] * 4
    assert len((data / "demo" / "rollouts" / "cycle-0.jsonl").read_text().splitlines()) == 4  # 2 tasks x 2 rollouts
    assert adapter in proc.stdout and "held-out" in proc.stdout and f"spanrl ui --data {data}" in proc.stdout
    assert "The gate promoted 0 of 1 candidates" in proc.stdout

    # the agent's spans: one root per rollout, the server's span a child of the agent's LLM call
    spans = str(data / "lake" / "spans" / "**" / "*.parquet")
    with duckdb.connect() as con:
        roots = dict(con.execute(
            "select name, count(*) from read_parquet($g) where parent_span_id is null group by 1", {"g": spans}).fetchall())
        # eval: 4 tasks x 2 cycles; val: the base and the candidate on 4 tasks; every rollout ran
        # through `spanrl rollout`, whose own span per attempt is a root too
        assert roots == {"invoke_agent calc": 4, "invoke_agent calc-eval": 8, "invoke_agent calc-val": 8,
                         "spanrl.rollout": 20}
        # the rollout ids reached the agent's spans through OTEL_RESOURCE_ATTRIBUTES only: the agent's
        # root carries none of its own, and each rollout id names one agent root and one runner span
        per_rollout = con.execute(
            """select json_extract_string(resource, '$."spanrl.rollout_id"') r,
                      count(*) filter (where name like 'invoke_agent%'), count(*) filter (where name = 'spanrl.rollout'),
                      count(*) filter (where name like 'invoke_agent%' and attributes like '%spanrl.rollout_id%')
               from read_parquet($g) where parent_span_id is null group by 1""", {"g": spans}).fetchall()
        assert len(per_rollout) == 20 and all(r[0] and r[1:] == (1, 1, 0) for r in per_rollout), per_rollout
        # the agent propagates nothing (issue 41): the server's span joins its attempt through the per-attempt
        # base URL the runner hands out, a child of the runner's span of that attempt
        orphans = con.execute(
            """select count(*) from read_parquet($g) s where s.service_name = 'spanrl-serve' and not exists
               (select 1 from read_parquet($g) p where p.span_id = s.parent_span_id and p.name = 'spanrl.rollout')""",
            {"g": spans}).fetchone()[0]
        assert orphans == 0
        rewards = con.execute("select count(*) from read_parquet($g) where name = 'spanrl.reward'", {"g": spans}).fetchone()[0]
        # one reward span per rollout the agent finished; the tiny random model's reply can push the next prompt
        # past its 1024-token context (a 400, which the agent records as a rollout without reward: its result
        # line has the error), and whether it does depends on how the server batched the requests
        results = [json.loads(x) for f in [*(data / "eval").glob("*.jsonl"), *(data / "demo" / "rollouts").glob("*.jsonl")]
                   for x in f.read_text().splitlines()]
        finished = [r for r in results if not r.get("error")]
        assert len(results) == 20 and len(finished) >= 10 and rewards == len(finished), (rewards, results)

    # held-out rollouts never reach the training snapshot; the trained one holds cycle 0 only
    table, _ = read_snapshot(data, "LATEST")
    assert table.num_rows > 0
    # ... and it is one row with the agent's record of the call (same response id): the engine's ids train
    assert set(table.column("token_source").to_pylist()) == {"engine"}
    assert all(table.column("prompt_messages").to_pylist())
    assert all(r.startswith("c0-") for r in table.column("rollout_id").to_pylist())
    assert not any(t.startswith("eval-") for t in table.column("task_id").to_pylist())

    # nothing left running: the ports the demo printed are closed
    ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", proc.stdout)]
    assert ports and not any(_port_open(p) for p in ports)


def _rows(rollouts: list[str], tasks: list[str], agents: list[str]) -> pa.Table:
    n = len(rollouts)
    cols = {f.name: pa.nulls(n, f.type) for f in TRANSITION_SCHEMA}
    cols.update(snapshot_id=pa.array(["x"] * n), rollout_id=pa.array(rollouts), task_id=pa.array(tasks),
                agent_name=pa.array(agents), step=pa.array([0] * n, pa.int32()), n_steps=pa.array([1] * n, pa.int32()))
    return pa.table(cols, schema=TRANSITION_SCHEMA)


def test_train_snapshot_keeps_only_this_cycles_rollouts(tmp_path: Path) -> None:
    from spanrl.demo.loop import train_snapshot

    write_snapshot(tmp_path, _rows(["c0-1-a-r0", "c1-2-b-r0", "c1-2-b-r1", "c10-3-c-r0"], ["a", "b", "b", "c"], ["calc"] * 4))
    sid = train_snapshot(tmp_path, 1)
    table, manifest = read_snapshot(tmp_path, sid)
    assert sorted(table.column("rollout_id").to_pylist()) == ["c1-2-b-r0", "c1-2-b-r1"]
    assert manifest["config"]["demo_cycle"] == 1 and manifest["config"]["parent_snapshot"]
    with pytest.raises(RuntimeError, match="no transition of cycle 7"):
        train_snapshot(tmp_path, 7)
    table, _ = read_snapshot(tmp_path, train_snapshot(tmp_path, 1, "c1-2-b-r1"))  # a resumed cycle's own run only
    assert table.column("rollout_id").to_pylist() == ["c1-2-b-r1"]


def test_a_held_out_or_validation_row_in_the_snapshot_stops_the_demo(tmp_path: Path) -> None:
    from spanrl.demo.loop import check_no_eval_rows

    write_snapshot(tmp_path, _rows(["c0-1-a-r0"], ["train-0-000"], ["calc"]))
    check_no_eval_rows(tmp_path)
    write_snapshot(tmp_path, _rows(["c0-1-a-r0", "c0-1-e-r0"], ["train-0-000", "eval-003"], ["calc", "calc-eval"]))
    with pytest.raises(RuntimeError, match="held-out"):
        check_no_eval_rows(tmp_path)
    write_snapshot(tmp_path, _rows(["c0-1-a-r0", "c0-1-v-r0"], ["train-0-000", "val-003"], ["calc", "calc"]))
    with pytest.raises(RuntimeError, match="validation"):  # even under the training agent's name
        check_no_eval_rows(tmp_path)


def test_cycles_continue_from_the_data_root(tmp_path: Path) -> None:
    from rich.console import Console

    from spanrl.demo.config import DemoConfig
    from spanrl.demo.loop import Demo

    demo = Demo(DemoConfig(data=tmp_path), Console())
    assert demo.first_cycle() == 0
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "cycles.jsonl").write_text('{"cycle": 1}\n{"cycle": 2}\n')
    assert demo.first_cycle() == 2  # an older data root: one cycle per adapter trained
    # the demo's own record wins (a rejected candidate is an adapter but not a new policy), and the
    # gate's reference (the policy's validation reward) survives the restart
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "cycles.jsonl").write_text(
        json.dumps({"cycle": 0, "policy_val_reward": 0.25}) + "\n" + json.dumps({"cycle": 1, "policy_val_reward": 0.5}) + "\n")
    assert demo.first_cycle() == 2 and demo.current_val == 0.5


def test_task_splits_are_seeded_and_disjoint() -> None:
    from spanrl.demo.agent import load_task_module

    tasks = load_task_module()
    held_out = tasks.make_tasks("eval", 32)
    assert held_out == tasks.make_tasks("eval", 32) and held_out[:5] == tasks.make_tasks("eval", 5)
    train = [t for seed in range(5) for t in tasks.make_tasks("train", 20, seed=seed)]
    assert train[:20] == tasks.make_tasks("train", 20, seed=0)
    val = tasks.make_tasks("val", 32)
    assert len(held_out) == 32 and len(tasks.make_tasks("eval", 64)) == 64 and val == tasks.make_tasks("val", 32)
    assert held_out == tasks.make_tasks("eval", 64)[:32]  # the held-out list only grew
    questions = [{t["question"] for t in split} for split in (tasks.make_tasks("eval", 64), val, train)]
    assert not questions[0] & questions[1] and not questions[0] & questions[2] and not questions[1] & questions[2]
    assert {t["task_id"][:4] for t in val} == {"val-"}
    assert len({t["task_id"] for t in train}) == 100
    for t in held_out + val + train:
        assert float(eval(t["expression"].replace("/", "//"))) == t["answer"]  # noqa: S307 - our own expressions


def _agent_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("calc_agent_agent", ROOT / "examples" / "calc_agent" / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_calculator_tool_and_answer_parsing() -> None:
    agent = _agent_module()
    assert agent.calculator("12 * 7") == "84" and agent.calculator("(3 + 4) / 2") == "3.5"
    assert agent.calculator("47 x 18") == "846" and agent.calculator("1,552 / 16") == "97"
    for bad in ("import os", "2 **", "1 / 0", "abs(-3)", ""):
        with pytest.raises(ValueError):
            agent.calculator(bad)
    assert agent.final_number("Each friend gets 97 pens.") == 97.0
    assert agent.final_number("1,310") == 1310.0 and agent.final_number("no idea") is None


def test_the_agent_imports_no_spanrl() -> None:
    source = (ROOT / "examples" / "calc_agent" / "agent.py").read_text()
    assert not re.search(r"^\s*(from|import)\s+spanrl", source, re.M)


def test_a_cycle_with_nothing_to_train_keeps_the_policy(tmp_path: Path) -> None:
    """``--loss sft`` keeps only rollouts at or above --sft-min-return; a cycle where none is leaves
    the policy as it is (the real `spanrl train` exits 2, the demo goes on), any other failure stops it."""
    from rich.console import Console

    from spanrl.demo.config import DemoConfig
    from spanrl.demo.loop import Demo, StepError
    from tests.helpers.tiny_model import tiny_rollout_rows, write_rows_snapshot

    model = make_tiny_model(tmp_path / "tiny")
    from transformers import AutoTokenizer

    sid = write_rows_snapshot(tmp_path, tiny_rollout_rows(AutoTokenizer.from_pretrained(model))).name
    console = Console(record=True, width=200)
    demo = Demo(DemoConfig(data=tmp_path, train_args=["--loss", "sft", "--sft-min-return", "99"]), console)
    demo.logs.mkdir(parents=True)
    seconds, candidate = demo.train(0, model, sid)
    assert seconds > 0 and candidate is None
    said = console.export_text()
    assert "cycle 0: nothing to train on" in said and "sft_dropped=12" in said
    assert not (tmp_path / "adapters" / "LATEST").exists()
    with pytest.raises(StepError, match="exit code 2") as failed:  # a real error still stops the demo
        Demo(DemoConfig(data=tmp_path, train_args=["--loss", "sft"]), console).train(0, tmp_path / "no-model", sid)
    assert "no such folder" in failed.value.log_tail


def test_the_tool_refuses_what_the_schema_refuses_and_reads_unparsed_calls() -> None:
    agent = _agent_module()
    assert agent.check_arguments('{"expression": "12 * 7"}') == "12 * 7"
    for bad in ('{"expr": "1"}', '{"expression": 3}', '{"expression": "1", "x": 1}', "nope", "[1]", None):
        with pytest.raises(ValueError):
            agent.check_arguments(bad)
    assert agent.CALCULATOR["function"]["parameters"]["additionalProperties"] is False  # what AIR checks too
    text = '<tool_call>\n{"name": "calculator", "arguments": {"expression": 40 - 12}}\n</tool_call>'
    assert agent.unparsed_tool_call(text) == ("calculator", '{"expression": 40 - 12}')
    assert agent.unparsed_tool_call("The answer is 28.") is None


@pytest.mark.timeout(120)
def test_air_fires_on_the_agents_own_tool_failures(tmp_path: Path) -> None:
    """The real agent against the fake OpenAI server, whose tool calls send ``{"query": ...}`` (not the
    calculator's schema): the tool span fails, ingest's default AIR rule hits the call that asked,
    and air credit (what the demo's `rl` method asks for) lowers that call's return by exactly the rule's value. (The client
    instrumentation does not record tool schemas; in the demo ``spanrl serve`` does, on its span
    (gen_ai.tool.definitions), so bad_tool_arguments fires there as well: -0.7 in all.)"""
    from tests.helpers.collector import running_collector
    from tests.helpers.fake_openai import FakeOpenAI

    data = tmp_path / "data"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "t-0", "question": "Ana has 12 pens and gets 30 more. How many?", "answer": 42}) + "\n")
    with running_collector(data) as ep, FakeOpenAI() as fake:
        env = {**os.environ, "OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "x", "OTEL_EXPORTER_OTLP_ENDPOINT": ep.http,
               "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "calc-agent",
               "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}
        subprocess.run([sys.executable, str(ROOT / "examples" / "calc_agent" / "agent.py"), "--tasks", str(tasks),
                        "--out", str(tmp_path / "out.jsonl"), "--run-id", "c0-1"], env=env, check=True, timeout=90)
    result = json.loads((tmp_path / "out.jsonl").read_text())
    assert result["tool_errors"] == 1 and result["tool_ok"] == 0 and result["reward"] == 0.0
    proc = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s",
                           "--credit", "air"], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table, manifest = read_snapshot(data, "LATEST")
    assert manifest["stats"]["air_hits_by_rule"] == {"tool_error": 1}
    rows = sorted(table.to_pylist(), key=lambda r: r["step"])
    assert [r["step_reward"] for r in rows] == pytest.approx([-0.2, 0.0])  # the call that sent {"query": ...}
    assert [r["return"] for r in rows] == pytest.approx([-0.2, 0.0])  # air credit: R (0) + its own AIR


def test_result_rows_come_from_the_runners_attempts(tmp_path: Path) -> None:
    """The demo's result files are the agent's stdout lines under the runner's rollout ids; an attempt
    that printed none (a crash) is a rollout without reward, its stderr tail as the error."""
    from spanrl.demo.agent import result_rows
    from spanrl.rollout import RolloutConfig, run_rollouts

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "ok", "input": "1 + 1"}\n{"task_id": "crash", "input": "x"}\n')
    agent = ['case "$SPANRL_TASK_ID" in crash) echo "no tool" >&2; exit 3;; '
             '*) echo noise; echo \'{"task_id": "ok", "reward": 1.0, "correct": true}\';; esac']
    summary = run_rollouts(RolloutConfig(tasks=tasks, n=2, command=["sh", "-c", *agent], data=tmp_path / "data",
                                         policy_url="http://127.0.0.1:9/v1", otlp="http://127.0.0.1:9",
                                         run_id="c0-1-train", retries=0))
    rows = sorted(result_rows(summary.run_dir, "train"), key=lambda r: r["rollout_id"])
    assert [r["rollout_id"] for r in rows] == ["c0-1-train.crash.0", "c0-1-train.crash.1",
                                               "c0-1-train.ok.0", "c0-1-train.ok.1"]
    assert [r["reward"] for r in rows] == [None, None, 1.0, 1.0] and rows[0]["error"].strip() == "no tool"
    assert rows[0]["split"] == "train" and rows[2]["correct"] is True
