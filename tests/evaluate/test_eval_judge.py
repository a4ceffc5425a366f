"""``spanrl eval --judge``: the LLM judge (a scripted fake judge server) scores each task's samples of
both policies in one group; the verdict follows its scores; a malformed answer is retried."""

from __future__ import annotations

import json
import re
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.evaluate.test_eval_cli import AGENT, TASKS, _Nope
from tests.helpers.fake_openai import FakeOpenAI
from tests.judge.fake_judge import TRAJECTORY, FakeJudge


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-judge")
    data, tasks = root / "data", root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    nope = ThreadingHTTPServer(("127.0.0.1", 0), _Nope)
    threading.Thread(target=nope.serve_forever, daemon=True).start()
    try:
        # the good policy's answers repeat the task ("capital of ..."); "nope" never does
        with FakeOpenAI() as policy, FakeJudge(script=["malformed"], good_word="capital") as judge:
            res = CliRunner().invoke(cli, [
                "eval", "--data", str(data), "--tasks", str(tasks), "--n", "1", "--out", str(root / "out"),
                "--timeout", "90s", "--policy", f"base=http://127.0.0.1:{nope.server_port}/v1",
                "--policy", f"0002-good={policy.url}", "--judge", judge.url, "--judge-model", "judge-m",
                "--concurrency", "3", "--report-to", "tensorboard", "--", *AGENT])
            yield root, res, judge.seen
    finally:
        nope.shutdown()


def test_judge_scores_both_policies_in_one_group_per_task(judged) -> None:
    root, res, seen = judged
    assert res.exit_code == 0, res.output
    doc = json.loads((root / "out" / "eval.json").read_text())
    assert doc["policies"]["base"]["rewards"] == {"fr": [0.2], "it": [0.2], "es": [0.2]}
    assert doc["policies"]["0002-good"]["rewards"] == {"fr": [1.0], "it": [1.0], "es": [1.0]}
    (comp,) = doc["comparisons"]
    assert comp["verdict"] == "better" and comp["diff"] == pytest.approx(0.8)
    assert doc["judge"]["groups"] == 3 and doc["judge"]["judged"] == 3 and doc["judge"]["rejected"] == []
    assert doc["judge"]["calls"] == 4  # one malformed answer, retried
    bodies = [s["body"] for s in seen]
    assert {b["model"] for b in bodies} == {"judge-m"}
    groups = [TRAJECTORY.findall(b["messages"][-1]["content"]) for b in bodies]
    assert all(len(g) == 2 for g in groups)  # both policies' samples of a task, together
    tasks = {re.search(r"capital of (\w+)", b["messages"][-1]["content"].split("<trajectory")[0]).group(1)
             for b in bodies}
    assert tasks == {"France", "Italy", "Spain"}


def test_score_and_judge_exclude_each_other(tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"input": "x"}\n')
    base = ["eval", "--data", str(tmp_path), "--tasks", str(tasks), "--policy", "http://h:1/v1"]
    for extra in ([], ["--score", "s", "--judge", "http://j/v1", "--judge-model", "m"], ["--judge", "http://j/v1"]):
        res = CliRunner().invoke(cli, [*base, *extra, "--", "agent"])
        assert res.exit_code == 2 and ("one way to score" in res.output or "--judge-model" in res.output), res.output


def test_eval_report_to_tensorboard_writes_the_means(judged) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root, res, _ = judged
    assert res.exit_code == 0, res.output
    (run,) = (root / "data" / "tensorboard").iterdir()
    acc = EventAccumulator(str(run))
    acc.Reload()
    assert [e.value for e in acc.Scalars("cycle/eval/0002-good/mean")] == [1.0]
    assert [e.value for e in acc.Scalars("cycle/eval/base/mean")] == [pytest.approx(0.2)]
