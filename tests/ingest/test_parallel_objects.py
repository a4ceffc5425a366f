"""``spanrl ingest --input s3://... --workers N``: the driver lists span objects and decides which are new;
each stage-1 task fetches its own from the store (issue 47, ingest/parallel.py, ``fetch_listed``), so a
worker shares nothing with the driver but the store, and the lake and its file state are those of a
one-process run.

The Ray run is a subprocess whose driver cannot fetch a span object (``objects._fetch`` raises there, and
only there: Ray's workers import the module afresh) and whose tasks cannot open anything under the
driver's cache, its writer mirror (``SPANRL_TEST_FORBID_ROOT``). The other tests run the same task code
in this process (a serial pool in place of Ray), where an object can be deleted between the listing and
its task's GET."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.ingest.scan import read_file_state
from tests.helpers.s3 import new_bucket, s3_server
from tests.ingest.conftest import ingest

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
CAPTURED = Path(__file__).resolve().parents[1] / "data" / "ingest" / "captured"  # real instrumentation
ARGS = ["--settle", "0s", "--missing-reward", "zero"]
# the driver of the Ray run: spanrl's CLI with the driver-side GET of a span object made to fail
NO_DRIVER_FETCH = ("import sys\nimport spanrl.ingest.objects as objects\n"
                   "def _no_fetch(store, info, dst):\n"
                   "    raise AssertionError(f'the driver fetched s3://{info.path}; its tasks should')\n"
                   "objects._fetch = _no_fetch\n"
                   "from spanrl.cli import cli\ncli(sys.argv[1:], prog_name='spanrl')\n")
FILE_STATE = ('select path, size, split_part(fingerprint, \'@\', 1) AS etag, split_part(fingerprint, \'@\', 2) '
              'AS mtime, fp_len, format, signal, active, "offset", rows, rejects, status from span_files order by path')


def _client():  # noqa: ANN202 - a boto3 S3 client
    import boto3

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def _upload(bucket: str) -> str:
    """The captured OTLP/JSON lines as awss3exporter objects (``otlp_json``, one request per object;
    every third gzipped, as its ``compression: gzip`` writes them); returns the ``--input`` URL."""
    client = _client()
    for f in sorted(CAPTURED.glob("*.jsonl")):
        signal = "logs" if f.name.startswith("logs") else "traces"
        for n, line in enumerate(f.read_text().splitlines()):
            key = f"spans/year=2026/month=11/day=22/hour=02/minute=50/{signal}_{f.stem[-12:]}{n:04d}.json"
            body = line.encode()
            if n % 3 == 2:
                key, body = key + ".gz", gzip.compress(body)
            client.put_object(Bucket=bucket, Key=key, Body=body)
    return f"s3://{bucket}/spans/"


def _sql(data: str | Path, query: str) -> list[dict]:
    out = CliRunner().invoke(cli, ["sql", "--data", str(data), "--format", "json", query])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.output.splitlines() if line.strip().startswith("{")]


def _remote_manifest(url: str) -> dict:
    from spanrl.remote import OBJECTS, read_state
    from spanrl.storage import ObjectStore

    store = ObjectStore(url)
    files = read_state(store).files
    latest = store.get(f"{OBJECTS}/{files['transitions/LATEST'][0]}").body.decode().strip()
    return json.loads(store.get(f"{OBJECTS}/{files[f'transitions/{latest}/manifest.json'][0]}").body)


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory) -> Iterator[dict[str, str]]:
    """One moto S3 server for the module, its settings in the environment; the driver's cache."""
    cache = tmp_path_factory.mktemp("driver-cache")
    with s3_server() as env, pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        mp.setenv("SPANRL_CACHE", str(cache))
        yield {**env, "SPANRL_CACHE": str(cache)}


def _on_workers(root: str, source: str, cache: str) -> subprocess.CompletedProcess:
    """``spanrl ingest --input <objects> --workers 2`` into the S3 root, a local Ray for the run."""
    env = {**os.environ, "RAY_ADDRESS": "", "SPANRL_TEST_FORBID_ROOT": cache}
    return subprocess.run([sys.executable, "-c", NO_DRIVER_FETCH, "ingest", "--data", root, "--input", source,
                           "--workers", "2", *ARGS], env=env, capture_output=True, text=True, timeout=280)


@pytest.fixture(scope="module")
def ray_run(s3_env, tmp_path_factory) -> dict:
    """The same objects ingested by one process into a local root, and by 2 Ray workers into an S3 root."""
    pytest.importorskip("ray", reason="Ray is the scale extra (make install installs it)")
    bucket = new_bucket(s3_env)
    source = _upload(bucket)
    local = tmp_path_factory.mktemp("one-process") / "data"
    one = CliRunner().invoke(cli, ["ingest", "--data", str(local), "--input", source, *ARGS])
    assert one.exit_code == 0, one.output
    root = f"s3://{bucket}/team/root"
    res = _on_workers(root, source, s3_env["SPANRL_CACHE"])
    assert res.returncode == 0, res.stderr[-3000:]
    return {"root": root, "local": local, "source": source, "res": res}


@pytest.mark.timeout(300)
def test_workers_fetch_their_own_objects_and_give_the_one_process_lake_and_hash(ray_run) -> None:
    from spanrl.transitions.snapshot import latest_manifest

    root, local = ray_run["root"], ray_run["local"]
    assert _remote_manifest(root)["content_hash"] == latest_manifest(local)["content_hash"]
    q = "select trace_id, span_id, name, source_file from spans order by trace_id, span_id"
    assert _sql(root, q) == _sql(local, q) != []
    # recorded as one process records them: size, ETag, LastModified, format (s3-json, s3-json-gzip), rows
    state = _sql(root, FILE_STATE)
    assert state == _sql(local, FILE_STATE) and len(state) == 10
    assert {r["format"] for r in state} == {"s3-json", "s3-json-gzip"}


@pytest.mark.timeout(300)
def test_a_rerun_on_workers_changes_nothing(ray_run) -> None:
    from spanrl.remote import read_state
    from spanrl.storage import ObjectStore

    root = ray_run["root"]
    before = read_state(ObjectStore(root)).version
    files = _sql(root, "select * from span_files order by path")
    again = _on_workers(root, ray_run["source"], os.environ["SPANRL_CACHE"])
    assert again.returncode == 0, again.stderr[-3000:]
    assert "published" not in again.stdout + again.stderr  # no new version for no change
    assert read_state(ObjectStore(root)).version == before
    assert _sql(root, "select * from span_files order by path") == files  # not even a fetched-at time moved


@contextmanager
def _serial_pool(workers: int | None) -> Iterator:
    """Ray's place taken by this process: the tasks' own code, called in turn."""
    yield lambda fn, calls: [fn(*args) for args in calls]


@pytest.fixture
def objects(s3_env, monkeypatch) -> tuple[str, list[str]]:
    """Three awss3exporter objects in a fresh bucket (one gzipped); ``--workers 2`` served by
    a serial pool; the URL and the keys."""
    from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line

    monkeypatch.setattr("spanrl.workers.worker_pool", _serial_pool)
    bucket = new_bucket(s3_env)
    client, keys = _client(), []
    for n, ext in enumerate([".json", ".json.gz", ".json"]):
        key = f"otel/year=2026/month=11/day=29/hour=06/minute=0{n}/traces_k{n}{ext}"
        line = trace_line([span(f"span-{n}", new_trace_id(), new_span_id())]).encode()
        client.put_object(Bucket=bucket, Key=key, Body=gzip.compress(line) if ext.endswith(".gz") else line)
        keys.append(key)
    return f"s3://{bucket}/otel/", [f"{bucket}/{k}" for k in keys]


def _tasks_only(monkeypatch, before_task=None) -> list[str]:
    """Every GET of a span object must come from a stage-1 task (``stage_group``); returns the keys fetched.
    ``before_task`` runs as a task starts (between the driver's listing and the task's GETs)."""
    import spanrl.ingest.objects as objects_mod
    import spanrl.ingest.parallel as parallel

    fetch, group, inside, fetched = objects_mod._fetch, parallel.stage_group, [], []

    def task_fetch(store, info, dst):  # noqa: ANN001, ANN202
        assert inside, f"the driver fetched s3://{info.path}; its tasks should"
        fetched.append(info.path)
        return fetch(store, info, dst)

    def task(*args):  # noqa: ANN002, ANN202
        if before_task:
            before_task()
        inside.append(1)
        try:
            return group(*args)
        finally:
            inside.pop()

    monkeypatch.setattr(objects_mod, "_fetch", task_fetch)
    monkeypatch.setattr(parallel, "stage_group", task)
    return fetched


def test_objects_fetched_by_tasks_are_recorded_as_one_process_records_them(tmp_path, objects, monkeypatch) -> None:
    url, keys = objects
    one = ingest(tmp_path / "one", input=url)
    fetched = _tasks_only(monkeypatch)
    tasks = ingest(tmp_path / "tasks", input=url, workers=2)
    assert sorted(fetched) == keys
    assert (tasks.files, tasks.spans, tasks.bytes, tasks.rejects) == (one.files, one.spans, one.bytes, one.rejects) \
        == (3, 3, one.bytes, 0)

    def meaning(data: Path) -> dict:  # the fetched-at time aside (when the GET ran), every column
        return {k: {**r, "fingerprint": r["fingerprint"].rsplit("@", 1)[0], "ingested_at": None}
                for k, r in read_file_state(data / "lake").items()}

    assert meaning(tmp_path / "tasks") == meaning(tmp_path / "one")
    assert ingest(tmp_path / "tasks", input=url, workers=2).files == 0 and len(fetched) == 3  # nothing fetched again


def test_an_object_gone_before_its_task_fetches_it_is_a_warning_and_not_recorded(tmp_path, objects,
                                                                                monkeypatch) -> None:
    url, keys = objects
    gone = keys[1]
    bucket, _, key = gone.partition("/")
    fetched = _tasks_only(monkeypatch, before_task=lambda: _client().delete_object(Bucket=bucket, Key=key))
    s = ingest(tmp_path, input=url, workers=2)
    assert f"s3://{gone}: gone before it could be read; not recorded" in s.warnings
    assert (s.files, s.spans) == (2, 2) and gone in fetched
    assert sorted(read_file_state(tmp_path / "lake")) == [f"s3://{k}" for k in keys if k != gone]


def test_a_task_without_credentials_of_its_own_stops_the_run_and_records_nothing(tmp_path, objects,
                                                                               monkeypatch) -> None:
    """A task reaches the store with its own environment's credentials, never the driver's (nothing
    secret travels in its arguments): without them it fails naming what to set, and nothing is recorded."""
    from spanrl.errors import InputError

    url, _ = objects

    def no_credentials() -> None:  # the task's environment, once the driver has listed
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))

    _tasks_only(monkeypatch, before_task=no_credentials)
    with pytest.raises(InputError, match="no S3 credentials; set AWS_ACCESS_KEY_ID"):
        ingest(tmp_path, input=url, workers=2)
    assert read_file_state(tmp_path / "lake") == {} and not list((tmp_path / "lake").glob("spans/*/*.parquet"))
