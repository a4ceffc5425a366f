"""A data root on S3 that something other than spanrl touched (issue 44), against moto's real S3 server:
a damaged object is named by readers and never published by writers; mirrors never serve another root's
state under the same bucket, prefix and version number; a ``ROOT`` or ``LEASE`` spanrl did not write is
named; a missing root is refused; a fresh mirror does not call a complete build stale.

One real ingest per module (``template``); each test works on a server-side copy of it, so it costs
copies, not ingests."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.s3 import new_bucket, s3_server, s3_server_process

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")

CAPTURED = Path(__file__).resolve().parent / "data" / "ingest" / "captured"  # real instrumentation (README there)
ARGS = ["--settle", "0s", "--missing-reward", "zero"]
SPANS = "select count(*) AS n from spans"
LOGS = "select count(*) AS n from logs"


@pytest.fixture(scope="module")
def s3_env() -> Iterator[dict[str, str]]:
    with s3_server() as env:
        yield env


@pytest.fixture(scope="module")
def template(s3_env, tmp_path_factory) -> str:
    """The bucket holding one root ingested from the captured spans (prefix ``root``)."""
    tmp = tmp_path_factory.mktemp("template")
    otel = tmp / "otel"
    otel.mkdir()
    for f in CAPTURED.glob("*.jsonl"):
        shutil.copy(f, otel / f.name)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in s3_env.items():
            mp.setenv(k, v)
        mp.setenv("SPANRL_CACHE", str(tmp / "cache"))
        bucket = new_bucket(s3_env)
        res = CliRunner().invoke(cli, ["ingest", "--data", f"s3://{bucket}/root", "--input", str(otel), *ARGS])
    assert res.exit_code == 0, res.output
    return bucket


def _client(env: dict[str, str]):
    import boto3

    return boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                        aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])


def _copy_root(env: dict[str, str], src_bucket: str, dst_bucket: str) -> None:
    client = _client(env)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=src_bucket, Prefix="root/"):
        for obj in page.get("Contents", []):
            client.copy_object(Bucket=dst_bucket, Key=obj["Key"], CopySource={"Bucket": src_bucket, "Key": obj["Key"]})


@pytest.fixture
def root(s3_env, template, monkeypatch, tmp_path) -> str:
    """A copy of the template root in a fresh bucket; this test's own mirror cache."""
    for k, v in s3_env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "cache"))
    bucket = new_bucket(s3_env)
    _copy_root(s3_env, template, bucket)
    return f"s3://{bucket}/root"


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _sql(data: str, query: str) -> list:
    out = _run("sql", "--data", data, "--format", "json", query)
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.output.splitlines() if line.strip().startswith("{")]


def _state(url: str):
    from spanrl.remote import read_state
    from spanrl.storage import ObjectStore

    store = ObjectStore(url)
    return store, read_state(store)


def _damage(url: str, prefix: str) -> tuple[str, str]:
    """Flip 64 bytes in the middle of the object of the first file under ``prefix``, keeping its size;
    returns (its path in the root, its object key)."""
    store, state = _state(url)
    rel = next(r for r in sorted(state.files) if r.startswith(prefix))
    key = f"objects/{state.files[rel][0]}"
    body = bytearray(store.get(key).body)
    mid = len(body) // 2
    body[mid:mid + 64] = bytes(b ^ 0xFF for b in body[mid:mid + 64])
    store.put(key, bytes(body))
    return rel, key


def _intact(url: str, key: str) -> bool:
    store, _ = _state(url)
    return hashlib.sha256(store.get(key).body).hexdigest() == key.split("/")[-1]


def test_a_damaged_object_is_named_by_readers_and_lake_verify(root: str) -> None:
    """Before: a fresh reader failed in the Parquet decoder without the object's name, and `count(*)`
    answered from the footer with exit 0."""
    rel, key = _damage(root, "lake/spans/")
    res = _run("sql", "--data", root, SPANS)
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert f"{root}/{key} ({rel}," in text and "damaged or overwritten on the store" in text
    assert "spanrl lake verify" in text

    verify = _run("lake", "verify", "--data", root)
    assert verify.exit_code == 2 and f"{key} ({rel})" in verify.output and "1 of " in verify.output


def test_a_writer_never_publishes_a_damaged_object_and_puts_back_what_it_holds(root: str, tmp_path: Path) -> None:
    """A writer with a warm mirror (it holds the right bytes) published the next version still naming
    the damaged object; now it puts the bytes back before its manifest names them. A writer without the
    right bytes (a fresh mirror; or its own copy damaged too) stops with exit 2 and publishes nothing."""
    from spanrl.remote import mirror_base, remote_root

    with remote_root(root, write=True, command="warm the mirror"):
        pass  # pulls every file: this machine's writer mirror now holds them
    rel, key = _damage(root, "lake/spans/")
    store, before = _state(root)

    os.environ["SPANRL_CACHE"] = str(tmp_path / "other-machine")  # a cold writer cannot tell the right bytes
    cold = _run("lake", "compact", "--data", root)
    assert cold.exit_code == 2 and f"{key} ({rel}," in " ".join(cold.output.split())
    assert _state(root)[1].manifest == before.manifest and not _intact(root, key)

    os.environ["SPANRL_CACHE"] = str(tmp_path / "cache")  # the warm writer's own copy damaged too (bit rot)
    mine = mirror_base(store, write=True) / "root" / rel
    good, st = mine.read_bytes(), mine.stat()
    mine.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    os.utime(mine, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(Exception, match="damaged or overwritten"), remote_root(root, True, "t") as m:
        (m / "feedback").mkdir(exist_ok=True)
        (m / "feedback" / "note.jsonl").write_text("")
    assert _state(root)[1].manifest == before.manifest

    mine.write_bytes(good)
    os.utime(mine, ns=(st.st_atime_ns, st.st_mtime_ns))
    with remote_root(root, write=True, command="a writer with the right bytes") as m:
        (m / "feedback").mkdir(exist_ok=True)
        (m / "feedback" / "note.jsonl").write_text("")
    after = _state(root)[1]
    assert after.version == before.version + 1 and after.files[rel] == before.files[rel]
    assert _intact(root, key)
    assert _run("lake", "verify", "--data", root).exit_code == 0  # every object hashed again: all intact


def _publish_other_root(url: str, lake: Path) -> None:
    """Version 1 of another root at ``url``: the template's lake without its logs."""
    from spanrl.remote import remote_root

    with remote_root(url, write=True, command="another root") as m:
        shutil.copytree(lake, m / "lake", ignore=shutil.ignore_patterns("logs"))


@pytest.mark.parametrize("where", ["another endpoint", "a recreated bucket"])
def test_a_mirror_never_serves_another_root_under_the_same_name_and_version(root: str, s3_env, tmp_path: Path,
                                                                           where: str) -> None:
    """Before, reader mirrors were keyed by bucket, prefix and version number: the second root's version
    1 was answered from the first root's mirror."""
    from spanrl.remote import remote_root

    with remote_root(root, write=False, command="read the first root") as first:
        lake = tmp_path / "lake"
        shutil.copytree(first / "lake", lake)
    assert list(lake.glob("logs/*/*.parquet"))
    bucket = root.split("/")[2]
    if where == "another endpoint":
        with s3_server_process() as other:
            _client(other).create_bucket(Bucket=bucket)
            os.environ["AWS_ENDPOINT_URL"] = other["AWS_ENDPOINT_URL"]
            _publish_other_root(root, lake)
            assert _sql(root, LOGS) == [{"n": 0}]
            os.environ["AWS_ENDPOINT_URL"] = s3_env["AWS_ENDPOINT_URL"]
        assert _sql(root, LOGS)[0]["n"] > 0  # the first endpoint's root, as it was
        return
    client = _client(s3_env)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
    client.delete_bucket(Bucket=bucket)
    client.create_bucket(Bucket=bucket)
    _publish_other_root(root, lake)
    assert _state(root)[1].version == 1
    assert _sql(root, LOGS) == [{"n": 0}]


@pytest.mark.parametrize("body", [b"hello", b"[]", b"{}"])
def test_a_lease_spanrl_did_not_write_is_named_not_taken_over(root: str, body: bytes) -> None:
    """Before: `hello` and `[]` were a traceback (exit 1); `{}` was taken over without a word."""
    store, before = _state(root)
    store.put("LEASE", body)
    res = _run("lake", "compact", "--data", root)
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert f"{root}/LEASE is not a spanrl lease (it holds {body.decode()!r})" in text
    assert f"aws s3 rm {root}/LEASE" in text
    assert store.get("LEASE").body == body and _state(root)[1].manifest == before.manifest


def test_a_root_pointer_spanrl_did_not_write_is_named_with_the_way_back(root: str) -> None:
    """Before: a traceback (exit 1) for each of these."""
    store, before = _state(root)
    for body in (b"hello", b"[]", b'{"version": 1}', b'{"version": 1, "manifest": "../x"}'):
        store.put("ROOT", body)
        for args in (["sql", "--data", root, SPANS], ["lake", "compact", "--data", root]):
            res = _run(*args)
            assert res.exit_code == 2, (body, args, res.output)
            text = " ".join(res.output.split())
            assert f"{root}/ROOT is not a spanrl root pointer (it holds {body.decode()!r})" in text
            assert f'write {{"version": 1, "manifest": "{before.manifest}"}} into ROOT' in text
    store.put("ROOT", json.dumps({"version": 1, "manifest": before.manifest}).encode())  # the way back
    assert _run("lake", "verify", "--data", root).exit_code == 0


def test_a_missing_s3_root_is_refused_by_readers_and_writers(root: str) -> None:
    """Before: `spanrl sql --data s3://bucket/typo-prefix` answered 0 rows with exit 0."""
    typo = root.replace("/root", "/typo-prefix")
    for args in (["sql", "--data", typo, SPANS], ["export", "--data", typo, "--format", "parquet", "--out", "x"],
                 ["tasks", "--data", typo], ["transitions", "build", "--data", typo], ["lake", "verify", "--data", typo]):
        res = _run(*args)
        assert res.exit_code == 2, (args, res.output)
        assert f"{typo}: no spanrl data root there (no ROOT object under that prefix)" in " ".join(res.output.split())
    from spanrl.storage import ObjectStore

    assert not list(ObjectStore(typo).listing())  # nothing was written there


def test_a_fresh_mirror_of_a_complete_build_is_not_called_stale(root: str) -> None:
    """Before, a fresh mirror's files had the mtime of their download, not the one stage 2 recorded, so
    `spanrl sql` said lake files had changed since the last build and to run `spanrl transitions build`."""
    res = _run("sql", "--data", root, "select count(*) AS n from llm_calls")
    assert res.exit_code == 0, res.output
    assert "new or changed" not in res.output and "transitions build" not in res.output
