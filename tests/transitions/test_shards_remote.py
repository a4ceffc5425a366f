"""Stage 2's shard tasks on an S3 root share nothing with the driver but the store (issue 47,
transitions/shards.py ``remote_shard``, spanrl/remote_tasks.py): each task fetches its lake files from
the store into a temp folder of its own and uploads its segment; a task that opens anything under the
driver's cache (its writer mirror) fails (``SPANRL_TEST_FORBID_ROOT``), and the build still gives the
one-process hash."""

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
from tests.helpers.s3 import new_bucket, s3_server

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured_multi"  # record.sh there
ARGS = ["--settle", "0s", "--missing-reward", "zero"]


def _remote_manifest(url: str) -> dict:
    from spanrl.remote import OBJECTS, read_state
    from spanrl.storage import ObjectStore

    store = ObjectStore(url)
    files = read_state(store).files
    latest = store.get(f"{OBJECTS}/{files['transitions/LATEST'][0]}").body.decode().strip()
    return json.loads(store.get(f"{OBJECTS}/{files[f'transitions/{latest}/manifest.json'][0]}").body)


def _build_on_workers(root: str, cache: Path) -> subprocess.CompletedProcess:
    """``spanrl transitions build --workers 2`` on the S3 root, a local Ray for the run: its tasks work in
    temp folders of their own (the worker's tempfile dir) and fail if Python opens or lists anything under
    the driver's cache, where its writer mirror is."""
    res = subprocess.run([sys.executable, "-m", "spanrl", "transitions", "build", "--data", root, "--workers", "2",
                          *ARGS], env={**os.environ, "RAY_ADDRESS": "", "SPANRL_TEST_FORBID_ROOT": str(cache)},
                         capture_output=True, text=True, timeout=280)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


@pytest.fixture
def s3_root(tmp_path: Path, monkeypatch):
    """A moto S3 server, a fresh bucket's root URL, and the driver's own cache folder (its mirror)."""
    with s3_server() as env:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "driver-cache"))
        yield f"s3://{new_bucket(env)}/team/root", tmp_path / "driver-cache"


def test_the_forbid_hook_refuses_a_path_under_the_root(tmp_path: Path) -> None:
    """The test hook itself: a process that is not the driver cannot open a file under the folder."""
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "f").write_text("x")
    code = ("import os; from spanrl.remote_tasks import forbid_root_for_tests as f; f(-1); "
            f"open({str(tmp_path / 'outside')!r}, 'w').close(); open({str(tmp_path / 'root' / 'f')!r})")
    res = subprocess.run([sys.executable, "-c", code], env={**os.environ, "SPANRL_TEST_FORBID_ROOT": str(tmp_path / "root")},
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "SPANRL_TEST_FORBID_ROOT: a task opened" in res.stderr, res.stderr[-2000:]


@pytest.mark.timeout(300)
def test_shard_tasks_that_cannot_see_the_drivers_root_give_the_one_process_hash(tmp_path: Path, s3_root) -> None:
    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    root, cache = s3_root
    src = tmp_path / "spans"
    src.mkdir()
    shutil.copy(next(CAPTURED.glob("traces-*.jsonl")), src)
    local = tmp_path / "local"  # one process, a local root
    assert CliRunner().invoke(cli, ["ingest", "--data", str(local), "--input", str(src), *ARGS]).exit_code == 0
    staged = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(src), "--no-transitions", *ARGS])
    assert staged.exit_code == 0, staged.output
    res = _build_on_workers(root, cache)
    manifest = _remote_manifest(root)
    assert manifest["stats"]["stage2"]["segments"].get("shards") == 2, res.stdout  # sharded, not the fallback
    assert manifest["content_hash"] == latest_manifest(local)["content_hash"]


@pytest.mark.timeout(300)
def test_a_sharded_night_on_an_s3_root_reads_the_store_and_gives_the_one_process_hash(tmp_path: Path,
                                                                                    s3_root) -> None:
    """An incremental night: its tasks fetch the last build's bookkeeping and the older lake file of a
    straggler's trace from the store; an older segment is rewritten by the driver."""
    from tests.transitions.test_incremental import Agent, S, _span

    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    root, cache = s3_root
    local, src = tmp_path / "local", tmp_path / "in"
    agent = Agent([src])

    def ingest(data: str, *extra: str) -> None:
        res = CliRunner().invoke(cli, ["ingest", "--data", data, "--input", str(src / "otel"), *extra, *ARGS])
        assert res.exit_code == 0, res.output

    agent.write(0, agent.rollout("a", 0, 1.0, "t1") + agent.rollout("c", 0, 0.5, "t2")
                + agent.rollout("w", 0, 1.0, "t2", root=False) + agent.rollout("y", 0, 1.0, "t4"))
    ingest(str(local)), ingest(root)
    tc, rc = agent.traces["c"]
    straggler = _span(tc, os.urandom(8).hex(), rc, "execute_tool calc", 3 * S, 3 * S + 10,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc"}, error=True)
    agent.write(1, agent.rollout("d", 1, 0.0, "t1") + agent.rollout("e", 1, 1.0, "t3")
                + [agent.root_span("w", 0), straggler])
    ingest(str(local)), ingest(root, "--no-transitions")
    res = _build_on_workers(root, cache)
    st = _remote_manifest(root)["stats"]["stage2"]
    assert st["mode"] == "incremental" and st["reason"] == "", res.stdout
    assert st["segments"]["shards"] == 2 and st["segments"]["rewritten"] == 1  # on workers, not the fallback
    assert _remote_manifest(root)["content_hash"] == latest_manifest(local)["content_hash"]
