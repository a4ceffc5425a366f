"""A data root on S3-compatible storage (``--data s3://BUCKET/PREFIX``, spanrl/remote.py), against moto's
real S3 server on loopback: the same spans give the same snapshot hash and the same SQL answers as a
local root; one writer at a time (a lease, taken over once its holder is gone); a writer killed mid-build
or mid-publish leaves the old state, and the next run ends with the same hash (issue 27)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.transitions.snapshot import latest_manifest
from tests.helpers.s3 import new_bucket, s3_server

moto_server = pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")

CAPTURED = Path(__file__).resolve().parent / "data" / "ingest" / "captured"  # real instrumentation (README there)
ARGS = ["--settle", "0s", "--missing-reward", "zero"]


@pytest.fixture(scope="module")
def s3_env():
    with s3_server() as env:
        yield env


@pytest.fixture
def root(s3_env, monkeypatch, tmp_path):
    """A fresh bucket; the root URL; this test's own mirror cache."""
    for k, v in s3_env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "cache"))
    return f"s3://{new_bucket(s3_env)}/team/root"


def _otel(tmp_path: Path) -> Path:
    otel = tmp_path / "otel"
    otel.mkdir()
    for f in CAPTURED.glob("*.jsonl"):
        shutil.copy(f, otel / f.name)
    return otel


def _remote_manifest(url: str) -> dict:
    """The LATEST snapshot's manifest as the store holds it (ROOT -> manifest -> objects)."""
    from spanrl.remote import OBJECTS, read_state
    from spanrl.storage import ObjectStore

    store = ObjectStore(url)
    files = read_state(store).files
    latest = store.get(f"{OBJECTS}/{files['transitions/LATEST'][0]}").body.decode().strip()
    return json.loads(store.get(f"{OBJECTS}/{files[f'transitions/{latest}/manifest.json'][0]}").body)


def _sql(data: str, query: str) -> list:
    out = CliRunner().invoke(cli, ["sql", "--data", data, "--format", "json", query])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.output.splitlines() if line.strip().startswith("{")]


def test_an_s3_root_gives_the_local_hash_and_the_same_sql_answers(tmp_path: Path, root: str) -> None:
    otel = _otel(tmp_path)
    local = tmp_path / "local"
    assert CliRunner().invoke(cli, ["ingest", "--data", str(local), "--input", str(otel), *ARGS]).exit_code == 0
    res = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])
    assert res.exit_code == 0, res.output
    assert "published" in res.output and "(version 1)" in res.output

    ours, theirs = latest_manifest(local), _remote_manifest(root)
    assert ours["rows"] > 0 and ours["content_hash"] == theirs["content_hash"]
    q = "select rollout_id, task_id, n_llm_calls, final_reward from rollouts order by rollout_id"
    assert _sql(root, q) == _sql(str(local), q) != []

    again = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])  # nothing new
    assert again.exit_code == 0 and "published" not in again.output  # no new version for no change

    # the root is a real shared store: a second machine (another mirror) reads the same state
    os.environ["SPANRL_CACHE"] = str(tmp_path / "other-machine")
    assert _sql(root, "select count(*) AS n from llm_calls") == _sql(str(local), "select count(*) AS n from llm_calls")


def test_one_writer_at_a_time_and_an_expired_lease_is_taken_over(tmp_path: Path, root: str, monkeypatch) -> None:
    from spanrl.lease import LEASE
    from spanrl.storage import ObjectStore

    otel = _otel(tmp_path)
    store = ObjectStore(root)
    held = {"token": "x", "host": "other-host", "pid": 1, "command": "spanrl ingest", "acquired_at": time.time(),
            "expires_at": time.time() + 3600}
    store.put(LEASE, json.dumps(held).encode(), if_none_match=True)
    refused = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])
    assert refused.exit_code == 2
    assert "is being written by `spanrl ingest` (host other-host, pid 1)" in " ".join(refused.output.split())
    assert store.get("ROOT") is None  # nothing published

    store.put(LEASE, json.dumps({**held, "expires_at": time.time() - 1}).encode())  # its holder stopped renewing
    took = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])
    assert took.exit_code == 0, took.output
    assert store.get(LEASE) is None and store.get("ROOT") is not None  # released after publishing


def test_a_command_that_cannot_use_an_s3_root_is_refused_by_name(root: str) -> None:
    res = CliRunner().invoke(cli, ["rollout", "--data", root, "--tasks", "t.jsonl", "--n", "1", "--", "echo", "{input}"])
    assert res.exit_code == 2 and "`spanrl rollout` cannot use a data root on object storage" in res.output


@pytest.mark.parametrize("point", ["part", "remote_publish"])
def test_kill_9_mid_build_or_mid_publish_then_a_rerun_gives_the_same_hash(tmp_path: Path, root: str,
                                                                         point: str) -> None:
    """``part``: the builder dies after writing the segment (the mirror holds half a build);
    ``remote_publish``: the process dies after uploading objects and the manifest, before ROOT moves.
    Both leave ROOT where it was and the lease held by a dead pid on this machine: the re-run takes it
    over at once, restores its mirror and ends with the local root's hash."""
    otel = _otel(tmp_path)
    local = tmp_path / "local"
    assert CliRunner().invoke(cli, ["ingest", "--data", str(local), "--input", str(otel), *ARGS]).exit_code == 0
    env = {**os.environ, "SPANRL_TEST_CRASH_AT": point}
    dead = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", root, "--input", str(otel), *ARGS],
                          env=env, capture_output=True, text=True, timeout=300)
    assert dead.returncode == 137, dead.stderr[-2000:]
    from spanrl.storage import ObjectStore

    store = ObjectStore(root)
    assert store.get("ROOT") is None and store.get("LEASE") is not None  # old state; the dead writer's lease
    res = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])
    assert res.exit_code == 0, res.output
    assert _remote_manifest(root)["content_hash"] == latest_manifest(local)["content_hash"]


def _upload_as_awss3exporter(url: str, otel: Path) -> str:
    """Each captured OTLP/JSON line as one object in the OTel Collector awss3exporter's layout
    (``otlp_json``: one request per object); returns the ``--input`` URL."""
    import boto3

    from spanrl.storage import split_url

    bucket, _ = split_url(url)
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    for f in sorted(otel.glob("*.jsonl")):
        signal = "logs" if f.name.startswith("logs") else "traces"
        for n, line in enumerate(f.read_text().splitlines()):
            key = f"spans/year=2026/month=11/day=22/hour=02/minute=50/{signal}_{f.stem[-12:]}{n:04d}.json"
            client.put_object(Bucket=bucket, Key=key, Body=line.encode())
    return f"s3://{bucket}/spans/"


def test_two_ray_workers_from_s3_objects_into_an_s3_root_give_the_local_hash(tmp_path: Path, root: str) -> None:
    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    source = _upload_as_awss3exporter(root, _otel(tmp_path))
    local = tmp_path / "local"  # the same objects, one process, a local root (source_files name the objects)
    assert CliRunner().invoke(cli, ["ingest", "--data", str(local), "--input", source, *ARGS]).exit_code == 0
    env = {**os.environ, "RAY_ADDRESS": ""}  # a local cluster for the run, started and stopped by spanrl
    res = subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", root, "--input", source,
                          "--workers", "2", *ARGS], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _remote_manifest(root)["content_hash"] == latest_manifest(local)["content_hash"]
    q = "select count(*) AS spans, count(DISTINCT trace_id) AS traces from spans"
    assert _sql(root, q) == _sql(str(local), q)


def test_a_second_concurrent_ingest_on_the_s3_root_is_refused(tmp_path: Path, root: str) -> None:
    """A real first writer holds the lease (stopped inside its build); a second ingest is refused at
    once naming it; the first then finishes and publishes."""
    otel = _otel(tmp_path)
    release = tmp_path / "release"
    first = subprocess.Popen([sys.executable, "-m", "spanrl", "ingest", "--data", root, "--input", str(otel), *ARGS],
                             env={**os.environ, "SPANRL_TEST_HOLD_AT": f"registered:{release}"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in first.stderr:  # the builder says when it holds (after the lease and the mirror)
            if "holding at registered" in line:
                break
        second = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS])
        assert second.exit_code == 2
        assert f"is being written by `spanrl ingest` (host {os.uname().nodename}, pid {first.pid})" in \
            " ".join(second.output.split())
    finally:
        release.touch()
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert "(version 1)" in err


def test_the_other_commands_work_on_an_s3_root(tmp_path: Path, root: str) -> None:
    """Housekeeping writers publish through the lease; readers read the published state."""
    from spanrl.remote import read_state
    from spanrl.storage import ObjectStore

    otel = _otel(tmp_path)
    assert CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS]).exit_code == 0
    before = read_state(ObjectStore(root)).version
    compact = CliRunner().invoke(cli, ["lake", "compact", "--data", root])
    assert compact.exit_code == 0, compact.output
    out = tmp_path / "export"
    exported = CliRunner().invoke(cli, ["export", "--data", root, "--format", "parquet", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    assert list(out.glob("*.parquet"))
    tasks = CliRunner().invoke(cli, ["tasks", "--data", root])
    assert tasks.exit_code == 0, tasks.output
    assert read_state(ObjectStore(root)).version >= before  # compaction published, or had nothing to do
    q = "select count(*) AS n from spans"
    assert _sql(root, q)[0]["n"] > 0


def test_readers_share_a_version_and_a_new_state_gets_its_own(tmp_path: Path, root: str) -> None:
    """A long reader (``spanrl ui``) does not block another (``spanrl sql``); a reader started after a
    writer published reads the new state while the first keeps its own."""
    from spanrl.remote import remote_root

    otel = _otel(tmp_path)
    assert CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS]).exit_code == 0
    with remote_root(root, write=False, command="a long reader") as first:
        version_1 = sorted(p.name for p in first.parent.parent.glob("v*"))
        assert _sql(root, "select count(*) AS n from spans")[0]["n"] > 0  # a second reader, meanwhile
        (otel / "more.jsonl").write_text((CAPTURED / "logs-2026-11-22T02-50-00.000.jsonl").read_text())
        assert CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(otel), *ARGS]).exit_code == 0
        with remote_root(root, write=False, command="a reader of version 2"):  # `spanrl sql` reads in place
            pass
        assert (first / "lake").is_dir()  # the first reader's files are still there
        assert len(sorted(p.name for p in first.parent.parent.glob("v*"))) == 2 and version_1
