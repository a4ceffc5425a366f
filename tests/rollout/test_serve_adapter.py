"""The server the runner starts serves the adapter asked for (``serve_adapter``: what ``spanrl eval``
pins per policy): LATEST by default, one adapter id, or the base model alone; the run id follows it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from spanrl.errors import InputError
from spanrl.rollout.config import RolloutConfig
from spanrl.rollout.runner import resolve_run_id
from spanrl.rollout.services import Otlp, started_server

PYTHON = sys.executable  # the stand-in's interpreter (sys.executable is patched to the stand-in)


def _adapters(data: Path) -> None:
    for cid in ("0001-a", "0002-b"):
        (data / "adapters" / cid).mkdir(parents=True)
    (data / "adapters" / "LATEST").write_text("0002-b\n")


def _argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, adapter: str | None) -> list[str]:
    """argv of the ``spanrl serve`` started_server runs (a stand-in that records it and prints the ready line)."""
    record = tmp_path / f"argv-{adapter}.json"
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{PYTHON}\nimport json, sys, time\njson.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n"
                    "print('spanrl serve: m on http://127.0.0.1:9/v1 (adapter: x)', flush=True)\ntime.sleep(60)\n")
    fake.chmod(0o755)
    monkeypatch.setattr("spanrl.rollout.services.sys.executable", str(fake))
    with started_server(tmp_path, Path("m"), Otlp("http://127.0.0.1:4999"), None, [], tmp_path / "serve.log",
                        adapter) as url:
        assert url == "http://127.0.0.1:9/v1"
    argv = json.loads(record.read_text())
    return argv[argv.index("--adapter") + 1:][:1] if "--adapter" in argv else []


def test_started_server_serves_latest_an_id_or_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _adapters(tmp_path)
    assert _argv(tmp_path, monkeypatch, None) == ["LATEST"]
    assert _argv(tmp_path, monkeypatch, "LATEST") == ["LATEST"]
    assert _argv(tmp_path, monkeypatch, "0001-a") == [str(tmp_path / "adapters" / "0001-a")]
    assert _argv(tmp_path, monkeypatch, "base") == []


def test_run_id_names_the_served_adapter(tmp_path: Path) -> None:
    _adapters(tmp_path)
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"input": "x"}\n')
    base = dict(tasks=tasks, n=1, command=["agent"], data=tmp_path, model=Path("m"))
    ids = {a: resolve_run_id(RolloutConfig(**base, serve_adapter=a)) for a in (None, "LATEST", "0002-b", "0001-a", "base")}
    assert ids[None] == ids["LATEST"] == ids["0002-b"]  # LATEST names 0002-b
    assert len({ids["0002-b"], ids["0001-a"], ids["base"]}) == 3
    with pytest.raises(InputError, match="serve_adapter"):
        RolloutConfig(tasks=tasks, n=1, command=["agent"], data=tmp_path, policy_url="http://h/v1", serve_adapter="base")
