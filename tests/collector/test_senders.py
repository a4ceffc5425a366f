"""Real senders against the collector subprocess: SDK exporters (HTTP and gRPC) configured only by
OTEL_EXPORTER_OTLP_* env vars, the SDK log exporter, and a raw OTLP/JSON POST as JS exporters send it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.collector import running_collector

SENDER = Path(__file__).with_name("sender.py")


def sender_env(endpoint: str, protocol: str, service: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "OTEL_SERVICE_NAME": service, "OTEL_EXPORTER_OTLP_INSECURE": "true", **extra})
    return env


def send(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SENDER), *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def read_spans(otel_dir: Path) -> list[dict[str, Any]]:
    """Flattens every span of every line, with its service name."""
    out = []
    for path in sorted(otel_dir.glob("traces*.jsonl")):
        for line in path.read_text().splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                attrs = {a["key"]: a["value"] for a in rs["resource"].get("attributes", [])}
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        out.append({**span, "service": attrs["service.name"]["stringValue"],
                                    "scope": ss["scope"]})
    return out


def attr(span: dict[str, Any], key: str) -> dict[str, Any]:
    return next(a["value"] for a in span.get("attributes", []) if a["key"] == key)


@pytest.mark.parametrize(("protocol", "scheme_endpoint"), [("http/protobuf", "http"), ("grpc", "grpc")])
def test_sdk_exporters_land_every_span_and_log(tmp_path: Path, protocol: str, scheme_endpoint: str) -> None:
    with running_collector(tmp_path) as ep:
        endpoint = ep.http if scheme_endpoint == "http" else "http://" + ep.grpc
        procs = [subprocess.Popen([sys.executable, str(SENDER), "--spans", "150", "--tag", f"s{k}", "--logs", "20"],
                                  env=sender_env(endpoint, protocol, f"svc{k}"), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for k in range(2)]
        outputs = [p.communicate(timeout=120)[0] for p in procs]
        assert all(p.returncode == 0 for p in procs), outputs
    spans = read_spans(ep.otel_dir)
    assert len(spans) == 300
    for k in range(2):
        mine = [s for s in spans if s["service"] == f"svc{k}"]
        assert sorted(s["name"] for s in mine) == sorted(f"s{k}-{i}" for i in range(150))
        by_name = {s["name"]: s for s in mine}
        root, child = by_name[f"s{k}-10"], by_name[f"s{k}-13"]
        assert "parentSpanId" not in root and child["parentSpanId"] == root["spanId"]
        assert child["traceId"] == root["traceId"] and len(root["traceId"]) == 32
        assert attr(child, "test.i") == {"intValue": "13"}
        assert attr(child, "test.ratio") == {"doubleValue": 3.25}
        assert child["flags"] == 256 and child["kind"] == 1 and child["status"] == {}
        assert child["scope"] == {"name": "spanrl.tests.sender", "version": "1.0"}
    records = []
    for line in (ep.otel_dir / "logs.jsonl").read_text().splitlines():
        for rl in json.loads(line)["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                records += sl["logRecords"]
    assert len(records) == 40
    first = next(r for r in records if r["body"]["kvlistValue"]["values"][0]["value"]["stringValue"]
                 == "s0 message 0")
    assert first["eventName"] == "gen_ai.user.message" and first["severityText"] == "INFO"


def test_token_through_otel_exporter_otlp_headers(tmp_path: Path) -> None:
    with running_collector(tmp_path, token="tok123") as ep:
        denied = send(sender_env(ep.http, "http/protobuf", "nope", OTEL_EXPORTER_OTLP_TIMEOUT="2"),
                      "--spans", "5", "--tag", "no")
        allowed = send(sender_env(ep.http, "http/protobuf", "yes",
                                  OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer tok123"), "--spans", "5", "--tag", "ok")
        grpc_ok = send(sender_env("http://" + ep.grpc, "grpc", "yes-grpc",
                                  OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer tok123"), "--spans", "5", "--tag", "g")
        assert allowed.returncode == 0 and grpc_ok.returncode == 0, allowed.stdout + allowed.stderr + grpc_ok.stderr
    assert "flushed=True" in allowed.stdout
    names = sorted(s["name"] for s in read_spans(ep.otel_dir))
    assert names == sorted([f"ok-{i}" for i in range(5)] + [f"g-{i}" for i in range(5)])
    assert denied.returncode in (0, 1)  # the SDK logs the 401 and drops the batch; nothing was written


def test_raw_otlp_json_post_like_js_exporters(tmp_path: Path) -> None:
    body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                             "value": {"stringValue": "vercel-agent"}}]},
                               "scopeSpans": [{"scope": {"name": "ai"}, "spans": [
                                   {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                                    "name": "ai.generateText", "kind": 1,
                                    "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": 1700000000500000000,
                                    "attributes": [{"key": "ai.prompt", "value": {"stringValue": "hi <b>&</b>"}},
                                                   {"key": "ai.usage.tokens", "value": {"intValue": 7}}],
                                    "status": {"code": 1}, "events": [], "links": []}]}]}]}
    with running_collector(tmp_path) as ep:
        req = urllib.request.Request(ep.http + "/v1/traces", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200 and resp.read() == b"{}"
            assert resp.headers["Content-Type"].startswith("application/json")
    assert (ep.otel_dir / "traces.jsonl").read_bytes() == (
        b'{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vercel-agent"}}]},'
        b'"scopeSpans":[{"scope":{"name":"ai"},"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c",'
        b'"spanId":"b7ad6b7169203331","name":"ai.generateText","kind":1,"startTimeUnixNano":"1700000000000000000",'
        b'"endTimeUnixNano":"1700000000500000000","attributes":[{"key":"ai.prompt","value":{"stringValue":'
        b'"hi <b>&</b>"}},{"key":"ai.usage.tokens","value":{"intValue":"7"}}],"status":{"code":1}}]}]}]}\n')
