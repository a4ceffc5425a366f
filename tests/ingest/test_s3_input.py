"""``spanrl ingest --input s3://BUCKET/PREFIX/``: objects in the OTel Collector awss3exporter layout, read
from a real S3-compatible server on loopback (moto's), through the same decode/load path as files."""

from __future__ import annotations

import gzip
import json
import uuid

import duckdb
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.ingest.scan import read_file_state
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line

moto_server = pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")


@pytest.fixture(scope="module")
def s3_env():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    yield env
    server.stop()


@pytest.fixture
def bucket(s3_env, monkeypatch):
    """A fresh bucket on the module's server, and an S3FileSystem to write objects with."""
    from pyarrow import fs

    for k, v in s3_env.items():
        monkeypatch.setenv(k, v)
    store = fs.S3FileSystem(access_key="test", secret_key="test", region="us-east-1", scheme="http",
                            allow_bucket_creation=True,
                            endpoint_override=s3_env["AWS_ENDPOINT_URL"].split("://")[1])
    name = f"b-{uuid.uuid4().hex[:12]}"
    store.create_dir(name)
    return name, store


def _put(store, key: str, body: bytes) -> None:
    with store.open_output_stream(key, compression=None) as out:
        out.write(body)


def _minute(m: int) -> str:
    """The awss3exporter's partition folders (s3_partition: minute)."""
    return f"otel/year=2026/month=11/day=26/hour=20/minute={m:02d}"


def _sdk_request(name: str) -> bytes:
    """A real OTel SDK export request (what otlp_proto writes, unframed): spans recorded by the SDK's
    tracer, encoded by the OTLP exporter's own encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests").start_as_current_span(name) as sp:
        sp.set_attribute("gen_ai.system", "openai")
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def _json_request(name: str) -> bytes:
    """What otlp_json writes: one ExportTraceServiceRequest as JSON, no trailing newline."""
    return trace_line([span(name, new_trace_id(), new_span_id())]).encode()


def _lake_state(data) -> tuple:
    files = sorted(str(p.relative_to(data)) for p in (data / "lake").rglob("*.parquet") if "_files" not in p.name)
    return files, read_file_state(data / "lake")


def _names(data) -> list[str]:
    return sorted(r[0] for r in duckdb.sql(f"SELECT name FROM '{data}/lake/spans/*/*.parquet'").fetchall())


def test_awss3exporter_objects_read_once_new_and_rewritten(tmp_path, bucket) -> None:
    name, store = bucket
    url = f"s3://{name}/otel/"
    m0 = f"{name}/{_minute(0)}"
    _put(store, f"{m0}/traces_a1.json", _json_request("json-plain"))
    _put(store, f"{m0}/traces_a2.json.gz", gzip.compress(_json_request("json-gzip")))
    _put(store, f"{m0}/traces_a3.binpb", _sdk_request("proto-plain"))
    _put(store, f"{m0}/traces_a4.binpb.gz", gzip.compress(_sdk_request("proto-gzip")))
    _put(store, f"{m0}/metrics_a5.json", b"{}")
    _put(store, f"{m0}/notes.txt", b"not spans")

    first = ingest(tmp_path, input=url)
    assert (first.files, first.spans, first.rejects) == (4, 4, 0)
    assert _names(tmp_path) == ["json-gzip", "json-plain", "proto-gzip", "proto-plain"]
    skipped = [w for w in first.warnings if "not read" in w]
    assert skipped and "2 object(s)" in skipped[0] and "metrics_a5.json" in skipped[0] and "notes.txt" in skipped[0]
    sources = duckdb.sql(f"SELECT DISTINCT source_file FROM '{tmp_path}/lake/spans/*/*.parquet'").fetchall()
    assert {s[0] for s in sources} == {f"s3://{m0}/traces_a{i}.{e}" for i, e in
                                       [(1, "json"), (2, "json.gz"), (3, "binpb"), (4, "binpb.gz")]}

    before = _lake_state(tmp_path)
    again = ingest(tmp_path, input=url)
    assert (again.files, again.spans) == (0, 0) and _lake_state(tmp_path) == before

    _put(store, f"{name}/{_minute(1)}/traces_b1.json.gz", gzip.compress(_json_request("later-minute")))
    later = ingest(tmp_path, input=url)
    assert (later.files, later.spans) == (1, 1) and "later-minute" in _names(tmp_path)

    key = f"s3://{m0}/traces_a1.json"
    old = read_file_state(tmp_path / "lake")[key]
    # same key, same size, likely the same LastModified second: only the ETag tells it changed
    _put(store, f"{m0}/traces_a1.json", _json_request("rewritten!"))
    changed = ingest(tmp_path, input=url)
    assert (changed.files, changed.spans) == (1, 1)
    assert "rewritten!" in _names(tmp_path) and "json-plain" in _names(tmp_path)  # the lake keeps what it read
    new = read_file_state(tmp_path / "lake")[key]
    assert new["fingerprint"].split("@")[0] != old["fingerprint"].split("@")[0] and new["size"] == old["size"]

    old_line = store.open_input_stream(f"{m0}/traces_a1.json").read()  # rewritten again, old span included
    _put(store, f"{m0}/traces_a1.json", old_line + b"\n" + _json_request("appended"))
    grown = ingest(tmp_path, input=url)
    assert (grown.files, grown.duplicates, grown.spans) == (1, 1, 1)  # the span read before is kept once
    assert _names(tmp_path).count("rewritten!") == 1 and "appended" in _names(tmp_path)
    assert ingest(tmp_path, input=url).files == 0


def test_corrupt_gzip_object_is_a_reject_naming_the_key(tmp_path, bucket) -> None:
    name, store = bucket
    good = gzip.compress(_json_request("fine"))
    _put(store, f"{name}/{_minute(3)}/traces_ok.json.gz", good)
    _put(store, f"{name}/{_minute(3)}/traces_bad.json.gz", good[: len(good) // 2])
    s = ingest(tmp_path, input=f"s3://{name}/otel")
    assert (s.files, s.spans, s.rejects) == (2, 1, 1)
    (row,) = duckdb.sql(f"SELECT file, error FROM '{tmp_path}/lake/_rejects/*.parquet'").fetchall()
    assert row[0] == f"s3://{name}/{_minute(3)}/traces_bad.json.gz" and "gzip" in row[1]
    assert ingest(tmp_path, input=f"s3://{name}/otel").files == 0  # recorded: not re-read every night


def test_an_unknown_bucket_is_exit_2_and_an_empty_prefix_is_no_new_data(tmp_path, bucket) -> None:
    name, _ = bucket
    runner = CliRunner()
    missing = runner.invoke(cli, ["ingest", "--data", str(tmp_path / "d"), "--input", f"s3://{name}x/otel/",
                                  "--no-transitions"])
    assert missing.exit_code == 2 and f"no bucket '{name}x'" in missing.output
    assert ingest(tmp_path, input=f"s3://{name}/otel/").files == 0  # the collector has written nothing yet


@pytest.mark.parametrize(("drop", "names"), [
    (["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"], ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]),
    (["AWS_ENDPOINT_URL", "AWS_REGION"], ["AWS_ENDPOINT_URL", "AWS_REGION"]),
])
def test_missing_settings_exit_2_naming_what_to_set(tmp_path, bucket, monkeypatch, drop, names) -> None:
    name, _ = bucket
    for var in [*drop, "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    result = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path / "d"), "--input", f"s3://{name}/otel/",
                                      "--no-transitions"])
    assert result.exit_code == 2, result.output
    assert all(n in result.output for n in names)
    assert json.dumps(result.output)  # a message, not a traceback


def test_a_same_second_same_size_rewrite_is_caught_by_the_etag() -> None:
    """LastModified has 1 s resolution: a rewrite of the same size within the second of the read lists the
    same size and LastModified, so only the ETag (a HEAD) tells it apart; an object read well after its
    write needs no request at all. (A stand-in store: the real server cannot be made to land two PUTs in
    one second without depending on timing.)"""
    from types import SimpleNamespace

    from spanrl.ingest.objects import SKEW_NS, _unchanged

    heads: list[str] = []

    class Head:
        def __init__(self, etag: str) -> None:
            self.etag = etag

        def __enter__(self) -> Head:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def metadata(self) -> dict:
            return {"ETag": f'"{self.etag}"'}

    def store(etag: str) -> SimpleNamespace:
        return SimpleNamespace(open_input_file=lambda path: heads.append(path) or Head(etag))

    mtime = 1_795_725_741_000_000_000
    info = SimpleNamespace(path="b/k", size=10, mtime_ns=mtime)
    fresh = {"size": 10, "fingerprint": f"e1@{mtime}@{mtime + SKEW_NS // 10}"}
    settled = {"size": 10, "fingerprint": f"e1@{mtime}@{mtime + SKEW_NS}"}
    assert _unchanged(store("e1"), info, fresh) and len(heads) == 1
    assert not _unchanged(store("e2"), info, fresh) and len(heads) == 2
    assert _unchanged(store("e2"), info, settled) and len(heads) == 2  # no request: the listing says enough
    assert not _unchanged(store("e1"), SimpleNamespace(path="b/k", size=11, mtime_ns=mtime), settled)
    assert not _unchanged(store("e1"), SimpleNamespace(path="b/k", size=10, mtime_ns=mtime + 10**9), settled)
    assert not _unchanged(store("e1"), info, None)
