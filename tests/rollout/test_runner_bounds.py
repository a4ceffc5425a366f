"""The runner stays bounded and leaves nothing running (issue 25): an agent that prints hundreds of MB,
one whose child escapes with ``setsid``, and a runner killed with -9 and resumed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from spanrl.rollout import RolloutConfig, run_rollouts
from spanrl.rollout.capture import HEAD_BYTES, TAIL_BYTES
from spanrl.rollout.reaper import tagged

ROOT = Path(__file__).resolve().parents[2]
SPEW_MB = 200
# prints SPEW_MB of 'x' lines, then its answer on the last line
SPEW = ("import sys\nline = b'x' * 1023 + b'\\n'\nblock = line * 1024\n"
        f"for _ in range({SPEW_MB}):\n    sys.stdout.buffer.write(block)\nprint('ANSWER 42', flush=True)\n")
# starts a child in a session of its own that would sleep for 5 minutes, then exits: the child is left behind
ESCAPE = ("import subprocess, sys\n"
          "p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
          "open(sys.argv[1], 'w').write(str(p.pid))\n")
# hangs the first time (a marker file says it ran), returns at once when run again
ONCE = ("import os, sys, time\nmark = sys.argv[1]\n"
        "if not os.path.exists(mark):\n    open(mark, 'w').write(str(os.getpid()))\n    time.sleep(300)\nprint('done')\n")


def _tasks(tmp_path: Path, n: int = 1) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": f"t{i}", "input": f"q{i}"}) + "\n" for i in range(n)))
    return tasks


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _peak_rss_mb(pid: int) -> float:
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())[1]) / 1024


def test_a_spewing_agent_costs_bounded_memory_and_disk(tmp_path: Path) -> None:
    """200 MB on stdout: the runner (a real `spanrl rollout` process) keeps head and tail on disk, its
    peak RSS does not grow with the output, the summary says what was kept, the tail holds the answer."""
    agent = tmp_path / "spew.py"
    agent.write_text(SPEW)
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "spanrl", "rollout", "--data", str(data), "--tasks",
                             str(_tasks(tmp_path)), "--n", "1", "--policy-url", "http://127.0.0.1:9/v1",
                             "--run-id", "spew", "--", sys.executable, str(agent)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        try:
            peak = max(peak, _peak_rss_mb(proc.pid))
        except (OSError, TypeError):
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err[-2000:]
    logs = data / "runs" / "spew" / "logs"
    outs = list(logs.glob("*.out"))
    assert len(outs) == 1
    size = outs[0].stat().st_size
    assert size <= HEAD_BYTES + TAIL_BYTES + 200, size
    text = outs[0].read_bytes()
    assert b"bytes left out here" in text and text.rstrip().endswith(b"ANSWER 42")
    assert sum(f.stat().st_size for f in (data / "runs").rglob("*") if f.is_file()) < 2_000_000
    assert peak < 400, f"runner peak RSS {peak:.0f} MB for {SPEW_MB} MB of output"
    end = [json.loads(x) for x in (data / "runs" / "spew" / "attempts.jsonl").read_text().splitlines()][-1]
    assert end["stdout_bytes"] == SPEW_MB * 1024 * 1024 + len("ANSWER 42\n")
    assert end["stdout_kept"] == HEAD_BYTES + TAIL_BYTES
    assert "kept of" in out and "printed" in out


def test_a_setsid_child_does_not_outlive_its_attempt(tmp_path: Path) -> None:
    """The agent exits and leaves a child in a session of its own (outside its process group): the
    child is gone when the attempt ends. (A timeout ends an attempt through the same kill; the agent
    exits by itself here, so no clock decides what the test sees.)"""
    agent = tmp_path / "escape.py"
    agent.write_text(ESCAPE)
    pid_file = tmp_path / "child.pid"
    cfg = RolloutConfig(tasks=_tasks(tmp_path), n=1, command=[sys.executable, str(agent), str(pid_file)],
                        data=tmp_path / "data", policy_url="http://127.0.0.1:9/v1", run_id="esc", timeout_s=120.0,
                        kill_grace_s=0.3, retries=0)
    summary = run_rollouts(cfg)
    child = int(pid_file.read_text())
    assert summary.statuses["ok"] == 1
    assert not _alive(child), "the setsid child survived its attempt"
    assert summary.descendants_killed >= 1
    assert not list(tagged(SPANRL_RUN_ID="esc"))


def test_agents_of_a_killed_runner_are_stopped_on_resume(tmp_path: Path) -> None:
    """kill -9 of the runner leaves its agent running; the resumed run stops it before running the
    sample again, and then finishes."""
    agent = tmp_path / "once.py"
    agent.write_text(ONCE)
    mark = tmp_path / "ran"
    args = [sys.executable, "-m", "spanrl", "rollout", "--data", str(tmp_path / "data"), "--tasks",
            str(_tasks(tmp_path)), "--n", "1", "--policy-url", "http://127.0.0.1:9/v1", "--run-id", "res",
            "--timeout", "600s", "--", sys.executable, str(agent), str(mark)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "250"}
    runner = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() or not mark.read_text():
            assert time.monotonic() < deadline and runner.poll() is None, "the agent never started"
            time.sleep(0.1)
        agent_pid = int(mark.read_text())
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        assert _alive(agent_pid)  # what the issue saw: the agent runs on without its runner
        resumed = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert not _alive(agent_pid), "the dead runner's agent was not stopped"
        assert "agent(s) of an earlier, killed runner" in resumed.stdout
    finally:
        if runner.poll() is None:
            runner.kill()
        for pid, _ in tagged(SPANRL_RUN_ID="res"):
            os.kill(pid, signal.SIGKILL)
