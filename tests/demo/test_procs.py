"""demo/procs.py: when a rollout phase fails because the demo's own server or collector is gone (the
kernel's out-of-memory killer, a crash), the demo says which process stopped and how, not only the
agents' "Connection error"."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from spanrl.demo.agent import Phase
from spanrl.demo.config import DemoConfig
from spanrl.demo.loop import Demo
from spanrl.demo.procs import exit_words, stopped_helpers


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])


def test_exit_words_name_the_signal_and_sigkills_usual_cause() -> None:
    assert exit_words(3) == "exited with 3"
    killed = exit_words(-signal.SIGKILL)
    assert killed.startswith("was killed by SIGKILL") and "out-of-memory killer" in killed
    assert exit_words(-signal.SIGTERM) == "was killed by SIGTERM"


def test_stopped_helpers_names_only_the_process_that_stopped(tmp_path: Path) -> None:
    serve, collector = _sleeper(), _sleeper()
    try:
        assert stopped_helpers({"serve": serve, "collector": collector}, tmp_path) == ""
        serve.kill()
        serve.wait(timeout=30)
        said = stopped_helpers({"serve": serve, "collector": collector}, tmp_path)
        assert f"the serve process (pid {serve.pid}) was killed by SIGKILL" in said
        assert str(tmp_path / "serve.log") in said and "collector" not in said
    finally:
        for proc in (serve, collector):
            proc.kill()
            proc.wait(timeout=30)


def test_a_phase_that_fails_with_its_server_gone_says_so(tmp_path: Path, monkeypatch) -> None:
    def phases_fail(*_args: object, **_kw: object) -> None:
        raise RuntimeError("no val rollout finished (run c0-1-val); see runs/c0-1-val/logs")

    monkeypatch.setattr("spanrl.demo.loop.run_phases", phases_fail)
    demo = Demo(DemoConfig(data=tmp_path), Console())
    demo.serve_url, demo.otlp_url = "http://127.0.0.1:9/", "http://127.0.0.1:9"
    serve, collector = _sleeper(), _sleeper()
    try:
        demo.helpers = {"collector": collector, "serve": serve}
        out = tmp_path / "val-0.jsonl"
        phase = [Phase("val", tmp_path / "t.jsonl", out)]
        with pytest.raises(RuntimeError, match="no val rollout finished") as alive:  # server fine: the error as it was
            demo._phases(0, None, phase)
        assert "serve process" not in str(alive.value)
        serve.send_signal(signal.SIGKILL)
        serve.wait(timeout=30)
        with pytest.raises(RuntimeError) as gone:
            demo._phases(0, None, phase)
        said = str(gone.value)
        assert "cycle 0's rollouts failed because the serve process" in said and "SIGKILL" in said
        assert f"spanrl demo --data {tmp_path.resolve()}" in said and "no val rollout finished" in said
    finally:
        for proc in (serve, collector):
            proc.kill()
            proc.wait(timeout=30)
