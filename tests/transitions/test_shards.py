"""Stage 2 sharded over Ray workers (``--workers N``, transitions/shards.py, issue 27): traces tied by a
rollout key or a response id stay in one shard; real multi-instrumentation spans (LLM calls merged
across traces) built by 2 workers give the one-process hash; a worker killed mid-build stops the run
before anything is published, and the re-run gives that hash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.transitions.snapshot import latest_manifest
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured_multi"  # record.sh there
ARGS = ["--settle", "0s", "--missing-reward", "zero"]


def test_connected_traces_stay_in_one_shard(tmp_path: Path) -> None:
    from spanrl.transitions.build import open_lake
    from spanrl.transitions.config import make_ingest_config
    from spanrl.transitions.rollouts import set_variables
    from spanrl.transitions.shards import plan_shards
    from spanrl.transitions.sqlfiles import read_sql

    t = [new_trace_id() for _ in range(5)]
    lines = [trace_line([span("a", t[0], new_span_id(), attrs={"spanrl.rollout_id": "x"})]),
             trace_line([span("b", t[1], new_span_id(), attrs={"spanrl.rollout_id": "x"})]),  # rollout x spans t0, t1
             trace_line([span("c", t[2], new_span_id(), attrs={"gen_ai.response.id": "r-1"})]),
             trace_line([span("d", t[3], new_span_id(), attrs={"gen_ai.response.id": "r-1"})]),  # one call, two traces
             trace_line([span("e", t[4], new_span_id())])]
    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / "traces.jsonl").write_text("\n".join(lines) + "\n")
    assert CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--no-transitions"]).exit_code == 0
    cfg = make_ingest_config(data=tmp_path)
    con = open_lake(cfg)
    con.execute(read_sql("rollouts/macros"))
    set_variables(con, cfg)
    shards = plan_shards(con, 3)
    groups = sorted(sorted(s) for s in shards)
    assert len(groups) == 3 and sorted(sum(groups, [])) == sorted(t)
    assert sorted(t[:2]) in groups or any(set(t[:2]) <= set(g) for g in groups)
    assert any(set(t[2:4]) <= set(g) for g in groups)
    assert plan_shards(con, 1) == []  # one shard asked: one process


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> tuple[Path, str]:
    """The captured night built by one process: its otel folder and content hash."""
    src = tmp_path_factory.mktemp("spans")  # both runs read it with --input: the same source_files
    shutil.copy(next(CAPTURED.glob("traces-*.jsonl")), src)
    root = tmp_path_factory.mktemp("one") / "data"
    res = CliRunner().invoke(cli, ["ingest", "--data", str(root), "--input", str(src), *ARGS])
    assert res.exit_code == 0, res.output
    return src, latest_manifest(root)["content_hash"]


def _ingest(data: Path, otel: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--input", str(otel),
                           "--workers", "2", *ARGS], env={**os.environ, "RAY_ADDRESS": "", **env},
                          capture_output=True, text=True, timeout=600)


def test_two_workers_give_the_one_process_hash_and_a_killed_worker_publishes_nothing(
        tmp_path: Path, one_process: tuple[Path, str]) -> None:
    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    otel, expected = one_process
    data = tmp_path / "sharded"
    dead = _ingest(data, otel, SPANRL_TEST_CRASH_AT="shard")
    assert dead.returncode == 1, dead.stderr[-3000:]
    assert "a Ray task of spanrl.transitions.shards.build_shard failed" in dead.stderr
    assert latest_manifest(data) is None  # stage 2 published nothing (stage 1's lake is there)

    res = _ingest(data, otel)
    assert res.returncode == 0, res.stderr[-3000:]
    manifest = latest_manifest(data)
    assert manifest["stats"]["stage2"]["segments"].get("shards") == 2  # really sharded, not the fallback
    assert manifest["content_hash"] == expected
    merged = json.loads(json.dumps(manifest["stats"]))["llm_calls_merged_across_traces"]
    assert merged > 0  # the data has calls recorded in two traces: the shards kept them whole
