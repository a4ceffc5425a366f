"""``spanrl lake gc`` on moto's real S3 server (issue 47): a run killed mid-publish leaves objects (and maybe
a manifest) that no published state names; gc removes exactly those, nothing the current state names, and
a second gc removes nothing; states older than the retention go with their objects; gc is a writer (the
lease) and refuses a local root by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.nights import ARGS, write_night
from tests.helpers.s3 import new_bucket, s3_server

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")


@pytest.fixture(scope="module")
def s3_env():
    with s3_server() as env:
        yield env


@pytest.fixture
def root(s3_env, monkeypatch, tmp_path) -> str:
    for k, v in s3_env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "cache"))
    return f"s3://{new_bucket(s3_env)}/root"


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _ingest(root: str, otel: Path, night: int) -> None:
    write_night(otel, night, rollouts=5)
    res = _run("ingest", "--data", root, "--input", str(otel), *ARGS)
    assert res.exit_code == 0, res.output


def _keys(root: str) -> dict[str, int]:
    """Every key under the root with its size, the lease left out (a dead writer's stays until taken over)."""
    from spanrl.storage import ObjectStore

    return {k: size for k, (_, size) in ObjectStore(root).listing().items() if k != "LEASE"}


def _named_by_current(root: str) -> set[str]:
    from spanrl.remote import read_state
    from spanrl.storage import ObjectStore

    state = read_state(ObjectStore(root))
    return {f"objects/{sha}" for sha, _ in state.files.values()} | {state.manifest}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", ["remote_upload", "remote_publish"])
def test_gc_removes_exactly_the_orphans_of_a_run_killed_mid_publish(tmp_path: Path, root: str, point: str) -> None:
    """``remote_upload``: killed after its first object went up (no manifest); ``remote_publish``: after every
    object and its manifest, before ROOT moved."""
    otel = tmp_path / "otel"
    for night in (0, 1):
        _ingest(root, otel, night)
    before = _keys(root)
    write_night(otel, 2, rollouts=5)
    env = {**os.environ, "SPANRL_TEST_CRASH_AT": point}
    dead = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", root, "--input", str(otel), *ARGS],
                          env=env, capture_output=True, text=True, timeout=300)
    assert dead.returncode == 137, dead.stderr[-2000:]
    after = _keys(root)
    orphans = set(after) - set(before)
    assert orphans and set(before) <= set(after) and not orphans & _named_by_current(root)
    manifests = {k for k in orphans if k.startswith("manifests/")}
    assert (len(manifests) == 1) if point == "remote_publish" else not manifests

    dry = _run("lake", "gc", "--data", root, "--keep-days", "0", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"would remove {len(orphans) - len(manifests)} object(s) and {len(manifests)} manifest(s)" in dry.output
    assert all(k in dry.output for k in orphans) and _keys(root) == after

    res = _run("lake", "gc", "--data", root, "--keep-days", "0")  # the dead writer's lease is taken over at once
    assert res.exit_code == 0, res.output
    assert f"removed {len(orphans) - len(manifests)} object(s) and {len(manifests)} manifest(s)" in res.output
    assert _keys(root) == before  # exactly the orphans: every earlier state (replaced < 1 h ago) kept
    again = _run("lake", "gc", "--data", root, "--keep-days", "0")
    assert again.exit_code == 0 and "nothing to collect" in again.output and _keys(root) == before
    verify = _run("lake", "verify", "--data", root)
    assert verify.exit_code == 0, verify.output

    res = _run("ingest", "--data", root, "--input", str(otel), *ARGS)  # the root goes on from where it was
    assert res.exit_code == 0 and "(version 3)" in res.output, res.output


@pytest.mark.timeout(300)
def test_gc_drops_states_past_the_retention_and_keeps_the_current_one(tmp_path: Path, root: str) -> None:
    from spanrl.garbage import collect_garbage

    otel = tmp_path / "otel"
    for night in (0, 1, 2):
        _ingest(root, otel, night)
    keys, current = _keys(root), _named_by_current(root)
    old = {k for k in keys if k.startswith(("objects/", "manifests/"))} - current
    assert old  # the first two states' lake files, segments and snapshots

    soon = collect_garbage(root, keep_days=7, dry_run=True, now=time.time() + 2 * 86400)
    assert not soon.remove and len(soon.kept) == 3  # both older states were replaced 2 days "ago": kept
    later = collect_garbage(root, keep_days=7, now=time.time() + 8 * 86400)
    assert set(later.remove) == old and len(later.kept) == 1
    assert set(_keys(root)) == set(keys) - old
    assert _run("lake", "verify", "--data", root).exit_code == 0
    out = _run("sql", "--data", root, "--format", "json", "select count(*) AS n from rollouts")
    assert out.exit_code == 0 and '{"n": 15}' in out.output, out.output
    _ingest(root, otel, 3)  # the next writer publishes on top of the collected root (its parent is gone)
    assert not collect_garbage(root, keep_days=0, dry_run=True).remove


def test_gc_is_one_writer_at_a_time_and_refuses_a_local_root(tmp_path: Path, root: str) -> None:
    from spanrl.lease import LEASE
    from spanrl.storage import ObjectStore

    _ingest(root, tmp_path / "otel", 0)
    store = ObjectStore(root)
    store.put("objects/" + "0" * 64, b"an orphan")
    held = {"token": "x", "host": "other-host", "pid": 1, "command": "spanrl ingest", "acquired_at": time.time(),
            "expires_at": time.time() + 3600}
    store.put(LEASE, json.dumps(held).encode(), if_none_match=True)
    res = _run("lake", "gc", "--data", root, "--keep-days", "0")
    assert res.exit_code == 2
    assert "is being written by `spanrl ingest` (host other-host, pid 1)" in " ".join(res.output.split())
    assert store.exists("objects/" + "0" * 64)  # nothing deleted while another writer holds the root
    store.delete(LEASE)
    res = _run("lake", "gc", "--data", root, "--keep-days", "0")
    assert res.exit_code == 0 and "removed 1 object(s) and 0 manifest(s)" in res.output, res.output
    assert not store.exists("objects/" + "0" * 64)

    local = _run("lake", "gc", "--data", str(tmp_path / "local"))
    assert local.exit_code == 2 and "A local root has no unreferenced objects" in " ".join(local.output.split())
