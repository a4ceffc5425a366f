"""Stage 2 takes the lake's writer lock (issue 9, item 14): with a real builder holding it, a second
builder and an ingest are refused (exit 2, a message saying what to do); once it is done, they run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from spanrl.cli import cli
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

ROOT = Path(__file__).resolve().parents[2]


def _spanrl(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "spanrl", *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _wait_for_line(proc: subprocess.Popen, text: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if text in line:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before {text!r}: {proc.stdout.read()}")
    raise AssertionError(f"no {text!r} within {timeout_s}s")


def test_a_builder_holding_the_lock_refuses_a_second_builder_and_an_ingest(tmp_path) -> None:
    data = tmp_path / "data"
    write_lines(data / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("s", new_trace_id(), new_span_id())])])
    assert CliRunner().invoke(cli, ["ingest", "--data", str(data), "--no-transitions"]).exit_code == 0
    write_lines(data / "otel" / "traces-2026-01-02T00-00-00.000.jsonl",
                [trace_line([span("later", new_trace_id(), new_span_id())])])
    release = tmp_path / "release"
    holder = _spanrl("transitions", "build", "--data", str(data), "--settle", "0s",
                     env={"SPANRL_TEST_HOLD_AT": f"locked:{release}"})
    try:
        _wait_for_line(holder, "holding at locked")
        for args in (["transitions", "build"], ["ingest"]):
            other = _spanrl(*args, "--data", str(data), "--settle", "0s")
            out, err = other.communicate(timeout=120)
            assert other.returncode == 2, out + err
            assert "another `spanrl ingest` or `spanrl transitions build`" in err and "wait for it" in err
    finally:
        release.touch()
        holder.communicate(timeout=120)
    assert holder.returncode == 0
    after = _spanrl("ingest", "--data", str(data), "--settle", "0s", "--no-transitions")
    out, err = after.communicate(timeout=120)
    assert after.returncode == 0, out + err
    from spanrl.ingest.views import connect

    names = sorted(r[0] for r in connect(data).execute("SELECT name FROM spans").fetchall())
    assert names == ["later", "s"]  # the refused ingest read nothing; this one read what it left


def test_the_lock_is_reentrant_in_one_process_and_released_by_a_crash(tmp_path) -> None:
    from spanrl.errors import InputError
    from spanrl.ingest.load import lake_lock

    lake = tmp_path / "lake"
    with lake_lock(lake), lake_lock(lake):
        pass
    crashed = _spanrl("transitions", "build", "--data", str(tmp_path), env={"SPANRL_TEST_CRASH_AT": "locked"})
    crashed.communicate(timeout=120)
    assert crashed.returncode == 137
    try:
        with lake_lock(lake):
            pass
    except InputError as exc:  # pragma: no cover - the failure this test guards against
        raise AssertionError("a killed builder left its lock behind") from exc
