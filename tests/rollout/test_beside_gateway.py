"""``spanrl rollout`` and ``spanrl eval`` beside a running gateway that holds the data root (issue 41).

The gateway's embedded collector holds DATA's collector lock; runs whose policy is another server find
its OTLP URL in the lock file and send their spans there instead of failing to start a collector of
their own. A ``--purpose eval`` baseline of an uninstrumented agent through the gateway is tagged on
the runner's span (the agent has none), so the next snapshot leaves it out while the training
rollouts of the same agent are in; a training run on a held-out tasks file is warned about; the
summary shows the mean score.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.collector.lock import running_endpoint
from spanrl.gateway.server import GatewayConfig, gateway_in_background
from tests.gateway.logprob_upstream import LogprobUpstream
from tests.helpers.fake_openai import FakeOpenAI
from tests.rollout.lake import ingest, query_spans, snapshot_rollouts

HERE = Path(__file__).parent
PLAIN = [sys.executable, str(HERE.parent / "gateway" / "plain_agent.py")]  # no telemetry: the gateway records it
ECHO = [sys.executable, "-c", "import sys; print(sys.stdin.read())"]  # no LLM call: only the runner's span
SCORER = f"{sys.executable} {HERE / 'scorer.py'}"
TASKS = [{"task_id": "fr", "input": "capital of France", "expected": "France"}]  # one: each run is one process


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("beside")
    data, tasks = root / "data", root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    wide = {"COLUMNS": "400"}  # the summary table unwrapped
    with FakeOpenAI() as policy, LogprobUpstream() as upstream:
        gw = gateway_in_background(GatewayConfig(upstream=upstream.url, data=data, port=0))
        try:
            held = running_endpoint(data)
            common = ["--data", str(data), "--tasks", str(tasks), "--n", "1", "--score", SCORER]
            through = ["rollout", *common, "--policy-url", gw.url + "/v1", "--adapter-id", "fake"]
            baseline = CliRunner().invoke(cli, [*through, "--purpose", "eval", "--", *PLAIN], env=wide)
            train = CliRunner().invoke(cli, [*through, "--", *PLAIN], env=wide)
            beside = CliRunner().invoke(cli, ["rollout", *common, "--policy-url", policy.url, "--adapter-id", "fake",
                                              "--", *ECHO], env=wide)
            evaluated = CliRunner().invoke(cli, ["eval", *common, "--policy", policy.url, "--out", str(root / "out"),
                                                 "--", *ECHO])
        finally:
            gw.stop()
    yield {"data": data, "held": held, "gw": gw, "baseline": baseline, "train": train, "beside": beside,
           "eval": evaluated}


def _run_id(result) -> str:
    return _flat(result.output).split("rollout run ", 1)[1].split()[0]


def test_the_runs_succeed_beside_the_gateway_and_send_to_its_collector(runs) -> None:
    pid, url = runs["held"]
    assert url == runs["gw"].gateway.otlp_url
    for name in ("baseline", "train", "beside", "eval"):
        assert runs[name].exit_code == 0, runs[name].output
    assert url in _flat(runs["beside"].output)  # its spans went to the gateway's collector
    assert running_endpoint(runs["data"]) is None  # released with the gateway


def _runner_spans(data: Path) -> dict[str, list[str | None]]:
    """run id -> the purpose of each of its ``spanrl.rollout`` spans, read from DATA/otel's files."""
    out: dict[str, list[str | None]] = {}
    for path in (data / "otel").glob("traces*.json*"):
        for line in path.read_text().splitlines():
            for rs in json.loads(line).get("resourceSpans", []):
                resource = {a["key"]: a["value"].get("stringValue") for a in rs["resource"].get("attributes", [])}
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        attrs = {a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])}
                        if span["name"] == "spanrl.rollout":
                            out.setdefault(attrs["spanrl.run_id"], []).append(resource.get("spanrl.rollout.purpose"))
    return out


def test_their_spans_landed_in_the_root_tagged_with_their_purpose(runs) -> None:
    by_run = _runner_spans(runs["data"])
    assert by_run.pop(_run_id(runs["baseline"])) == ["eval"]
    assert by_run.pop(_run_id(runs["train"])) == by_run.pop(_run_id(runs["beside"])) == [None]
    (evals,) = by_run.values()  # spanrl eval's run
    assert evals == ["eval"]


def test_the_next_snapshot_leaves_the_eval_rollouts_out(runs) -> None:
    data = runs["data"]
    ingest(data, "--missing-reward", "zero")
    train = _run_id(runs["train"])
    assert sorted(snapshot_rollouts(data)) == sorted(f"{train}.{t['task_id']}.0" for t in TASKS)
    rows = query_spans(data, "SELECT count(*) AS n, count(attributes->'spanrl.response_logprobs') AS behaviour "
                             "FROM spans WHERE scope_name = 'spanrl.gateway'")
    assert rows == [{"n": 4, "behaviour": 4}]  # the gateway asked for them, though the agent did not


def test_the_summary_says_purpose_mean_score_and_warns_on_held_out_tasks(runs) -> None:
    base, train = _flat(runs["baseline"].output), _flat(runs["beside"].output)
    assert re.search(r"mean score\W+1 over 1 scored sample\(s\)", base)
    assert re.search(r"purpose\W+eval: held out, left out of training snapshots", base)
    assert "these tasks are held out" not in base
    assert "these tasks are held out: 1 evaluation run(s)" in train and _run_id(runs["baseline"]) in train
    last = json.loads((runs["data"] / "runs" / _run_id(runs["baseline"]) / "run.json").read_text())
    assert last["purpose"] == "eval" and last["last_invocation"]["mean_score"] == 1.0
