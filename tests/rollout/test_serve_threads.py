"""``--threads N`` (issue 41): the ``spanrl serve`` that ``spanrl rollout --model`` and ``spanrl eval
--model`` start gets ``--threads N``; with a server of one's own (a URL) the flag is refused, saying how."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.evaluate.run import EvalConfig, rollout_config
from spanrl.rollout.config import RolloutConfig

ECHO = [sys.executable, "-c", "import sys; print(sys.stdin.read())"]


def _fake_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for ``python -m spanrl serve`` that records its argv and prints the ready line."""
    record = tmp_path / "argv.json"
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{sys.executable}\nimport json, sys, time\njson.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n"
                    "print('spanrl serve: m on http://127.0.0.1:9/v1 (adapter: none)', flush=True)\ntime.sleep(60)\n")
    fake.chmod(0o755)
    monkeypatch.setattr("spanrl.rollout.services.sys.executable", str(fake))
    return record


def test_rollout_model_threads_reach_the_started_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _fake_serve(tmp_path, monkeypatch)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t", "input": "x"}\n')
    out = CliRunner().invoke(cli, ["rollout", "--data", str(tmp_path / "data"), "--tasks", str(tasks), "--n", "1",
                                   "--model", str(tmp_path / "m"), "--threads", "2", "--otlp", "http://127.0.0.1:9",
                                   "--", *ECHO])
    assert out.exit_code == 0, out.output
    argv = json.loads(record.read_text())
    assert argv[:3] == ["-m", "spanrl", "serve"] and argv[argv.index("--threads") + 1] == "2"


def test_eval_passes_threads_to_the_servers_it_starts(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t", "input": "x"}\n')
    cfg = EvalConfig(tasks=tasks, policies=["base", "http://127.0.0.1:9/v1"], command=["agent"], score="s",
                     data=tmp_path, model=tmp_path / "m", threads=3)
    assert rollout_config(cfg, "base").threads == 3
    assert rollout_config(cfg, "http://127.0.0.1:9/v1").threads is None  # a server of one's own
    assert rollout_config(cfg, "base").purpose == "eval"


def test_threads_without_a_started_server_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="spanrl serve --threads N"):
        RolloutConfig(tasks=tmp_path / "t.jsonl", n=1, command=["x"], data=tmp_path, policy_url="http://p/v1", threads=2)
    with pytest.raises(InputError, match="at least 1"):
        RolloutConfig(tasks=tmp_path / "t.jsonl", n=1, command=["x"], data=tmp_path, model=Path("m"), threads=0)
    with pytest.raises(InputError, match="--threads sets the `spanrl serve` eval starts"):
        EvalConfig(tasks=tmp_path / "t.jsonl", policies=["http://p/v1"], command=["x"], score="s", threads=2)
