"""``spanrl eval`` end to end: a real agent (tests/rollout/agent.py) against two local servers that
answer differently, the rollout runner, a scorer; then ``spanrl adapters promote --if-better``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.publish import draft_folder, publish, read_pointer
from tests.helpers.fake_openai import FakeOpenAI
from tests.rollout.lake import ingest, query_spans

ROLLOUT = Path(__file__).parents[1] / "rollout"
AGENT = [sys.executable, str(ROLLOUT / "agent.py")]
SCORER = f"{sys.executable} {ROLLOUT / 'scorer.py'}"
TASKS = [{"task_id": "fr", "input": "capital of France", "expected": "France"},
         {"task_id": "it", "input": "capital of Italy", "expected": "Italy"},
         {"task_id": "es", "input": "capital of Spain", "expected": "Spain"}]


class _Nope(BaseHTTPRequestHandler):
    """A policy that always answers "nope" (never the expected word)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "nope",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "nope"},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _eval_args(data: Path, tasks: Path, out: Path, policies: list[str]) -> list[str]:
    return ["eval", "--data", str(data), "--tasks", str(tasks), "--n", "2", "--out", str(out), "--timeout", "90s",
            "--score", SCORER, *(a for p in policies for a in ("--policy", p))]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    data, tasks = root / "data", root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    nope = ThreadingHTTPServer(("127.0.0.1", 0), _Nope)
    threading.Thread(target=nope.serve_forever, daemon=True).start()
    bad = f"0001-bad=http://127.0.0.1:{nope.server_port}/v1"
    try:
        with FakeOpenAI() as fake:
            good = f"0002-good={fake.url}"
            cmd = [sys.executable, "-m", "spanrl", *_eval_args(data, tasks, root / "out", [bad, good]),
                   "--concurrency", "4", "--", *AGENT]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ))
            # the same policies the other way round: every rollout is already done (resumed, nothing runs)
            reverse = CliRunner().invoke(cli, [*_eval_args(data, tasks, root / "rev", [good, bad]),
                                               "--fail-if-worse", "--", *AGENT])
            yield root, data, proc, reverse
    finally:
        nope.shutdown()


def test_eval_reports_the_better_policy(evaluated) -> None:
    root, _, proc, _ = evaluated
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((root / "out" / "eval.json").read_text())
    assert doc["policies"]["0001-bad"]["mean"] == 0.0 and doc["policies"]["0002-good"]["mean"] == 1.0
    assert {t: len(v) for t, v in doc["policies"]["0002-good"]["rewards"].items()} == {"fr": 2, "it": 2, "es": 2}
    (comp,) = doc["comparisons"]
    assert (comp["baseline"], comp["candidate"], comp["verdict"]) == ("0001-bad", "0002-good", "better")
    assert comp["ci"] == [1.0, 1.0] and doc["config"]["level"] == 0.95
    assert (root / "out" / "report.png").stat().st_size > 1000
    assert "better" in proc.stdout


def test_fail_if_worse_exits_1(evaluated) -> None:
    root, _, _, reverse = evaluated
    assert reverse.exit_code == 1, reverse.output
    (comp,) = json.loads((root / "rev" / "eval.json").read_text())["comparisons"]
    assert comp["verdict"] == "worse"


def test_eval_rollouts_are_in_the_lake_tagged(evaluated) -> None:
    _, data, _, _ = evaluated
    ingest(data, "--missing-reward", "zero")
    rows = query_spans(data, "SELECT resource->>'spanrl.rollout.purpose' AS purpose, count(DISTINCT "
                             "resource->>'spanrl.rollout_id') AS n FROM spans WHERE service_name = 'plain-agent' "
                             "GROUP BY ALL")
    assert rows == [{"purpose": "eval", "n": 12}]


def _adapter(root: Path, cycle_id: str, point: bool) -> None:
    with draft_folder(root, cycle_id) as tmp:
        (tmp / "adapter_config.json").write_text("{}")
        (tmp / "training_state.json").write_text(json.dumps({"cycle_id": cycle_id}))
        publish(tmp, cycle_id, point=point)


def test_promote_if_better(evaluated, tmp_path: Path) -> None:
    root = evaluated[0]
    adapters = tmp_path / "adapters"
    _adapter(adapters, "0001-bad", point=True)
    _adapter(adapters, "0002-good", point=False)
    promote = ["adapters", "promote", "--out", str(adapters), "--if-better"]
    worse = CliRunner().invoke(cli, [*promote, str(root / "rev" / "eval.json"), "0001-bad"])
    assert worse.exit_code == 2 and "'worse'" in worse.output and read_pointer(adapters) == "0001-bad"
    undecided = json.loads((root / "out" / "eval.json").read_text())
    undecided["comparisons"][0].update(verdict="no detectable difference", ci=[-0.1, 0.2])
    (tmp_path / "undecided.json").write_text(json.dumps(undecided))
    res = CliRunner().invoke(cli, [*promote, str(tmp_path / "undecided.json"), "0002-good"])
    assert res.exit_code == 2 and "no detectable difference" in res.output and "-0.1, 0.2" in res.output
    assert read_pointer(adapters) == "0001-bad"
    res = CliRunner().invoke(cli, [*promote, str(root / "out" / "eval.json"), "0002-good"])
    assert res.exit_code == 0, res.output
    assert read_pointer(adapters) == "0002-good"
