"""An incremental night sharded over Ray workers (``--workers 2`` on a nightly ``spanrl ingest``, issue 47,
transitions/shards.py ``write_night_shards``) gives the one-process night's snapshot (same content hash,
same tables) and so a from-scratch build's; a night whose closure needs a second round (a new trace of
an older rollout) is redone in one process, says so, and gives that hash too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spanrl.transitions.snapshot import latest_manifest
from tests.transitions.test_incremental import Agent, S, _ingest, _same, _span, _table


def _sharded(data: Path) -> dict:
    """The nightly ingest with two Ray workers (a local Ray, as a user without RAY_ADDRESS gets)."""
    res = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s",
                          "--workers", "2"], env={**os.environ, "RAY_ADDRESS": ""},
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return latest_manifest(data)["stats"]["stage2"]


@pytest.mark.timeout(300)
def test_a_sharded_incremental_night_equals_the_one_process_night(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    sharded, one, full = tmp_path / "sharded", tmp_path / "one", tmp_path / "full"
    agent = Agent([sharded, one, full])

    # night 0, in one process: complete rollouts (one breaks its tool: AIR), one whose root span is late
    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("b", 0, 0.0, "t1", tool_error=True)
                + agent.rollout("c", 0, 0.5, "t2") + agent.rollout("w", 0, 1.0, "t2", root=False)
                + agent.rollout("y", 0, 1.0, "t4"))
    _ingest(sharded), _ingest(one)  # (not a copy of one root: the lake records where its span files lay)

    # night 1: new rollouts (x over two new traces), w's late root, a straggler span of the complete rollout c
    # (its older segment is rewritten), late feedback for a by rollout id and for b by response id
    tc, rc = agent.traces["c"]
    straggler = _span(tc, os.urandom(8).hex(), rc, "execute_tool calc", 3 * S, 3 * S + 10,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc"}, error=True)
    x = agent.rollout("x", 1, 1.0, "t3") + agent.rollout("x", 1, 1.0, "t3", calls=1)
    agent.write(1, agent.rollout("d", 1, 0.0, "t1") + agent.rollout("e", 1, 1.0, "t3") + x
                + [agent.root_span("w", 0), straggler])
    agent.feedback("day1.jsonl", [{"rollout_id": "a", "value": 0.25, "name": "primary"},
                                  {"response_id": "resp-b-0", "value": 0.75, "name": "primary"}])
    st = _sharded(sharded)
    assert st["mode"] == "incremental" and st["reason"] == ""
    assert st["segments"]["shards"] == 2 and st["segments"]["rewritten"] == 1  # on workers, not the fallback
    assert st["why"] == {"feedback changed": 2, "new lake files": 6, "rollouts waiting": 1}
    _ingest(one)
    assert _same(sharded, one)["traces_recomputed"] == st["traces_recomputed"] == 8
    _ingest(full, "--rebuild")
    _same(sharded, full)


def _serial_workers(monkeypatch) -> None:
    """``--workers 2`` runs its shards in this process (``worker_pool``'s serial mapper): the plan and its
    fallbacks are what these tests check, Ray the test above."""
    import spanrl.workers

    pool = spanrl.workers.worker_pool
    monkeypatch.setattr(spanrl.workers, "worker_pool", lambda workers: pool(None))


def test_a_night_whose_closure_needs_a_second_round_falls_back_to_one_process(tmp_path: Path, monkeypatch) -> None:
    """A new trace of an older rollout joins it in a second closure round, which a shard cannot take
    alone: the night is computed in one process, says why, and equals that night; the next night shards."""
    _serial_workers(monkeypatch)
    sharded, one = tmp_path / "sharded", tmp_path / "one"
    agent = Agent([sharded, one])
    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("y", 0, 1.0, "t4"))
    _ingest(sharded), _ingest(one)

    agent.write(1, agent.rollout("y", 1, 1.0, "t4", calls=1) + agent.rollout("f", 1, 0.0, "t4"))  # y's 2nd trace
    st = _ingest(sharded, "--workers", "2")["stats"]["stage2"]
    assert st["mode"] == "incremental" and st["reason"] == "in one process: a closure round added 1 trace(s) to a shard"
    assert st["closure_rounds"] == 2 and "shards" not in st["segments"]
    _ingest(one)
    assert _same(sharded, one)["traces_recomputed"] == st["traces_recomputed"] == 3

    agent.write(2, agent.rollout("g", 2, 1.0, "t1") + agent.rollout("h", 2, 0.0, "t4"))  # two new rollouts: shards
    st = _ingest(sharded, "--workers", "2")["stats"]["stage2"]
    assert st["reason"] == "" and st["segments"]["shards"] == 2
    _ingest(one)
    _same(sharded, one)


def test_a_night_whose_data_fails_a_statement_falls_back_and_quarantines(tmp_path: Path, monkeypatch) -> None:
    """A statement that fails on a shard's data: the night goes back to one process, which quarantines the
    trace (a full build without it) as it always does (tests/ingest/test_quarantine.py holds that
    build to a clean one)."""
    _serial_workers(monkeypatch)
    agent = Agent([tmp_path])
    agent.write(0, agent.rollout("a", 0, 1.0, "t1"))
    _ingest(tmp_path)

    agent.write(1, agent.rollout("i", 1, 1.0, "t1") + agent.rollout("j", 1, 0.0, "t4"))
    monkeypatch.setenv("SPANRL_TEST_FAIL_ON_TRACE", agent.traces["i"][0])  # i's data breaks stage 2
    st = _ingest(tmp_path, "--workers", "2")["stats"]["stage2"]
    assert st["reason"].startswith("in one process: stage 2 failed on a shard's data") and st["quarantined"] == 1
    assert [r[0] for r in _table(tmp_path, "rollouts", "rollout_id")] == ["a", "j"]
