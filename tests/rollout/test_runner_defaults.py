"""``spanrl rollout``'s defaults that used to fail silently or surprise (issue 24): the OTLP protocol
handed to the agent matches the endpoint, the runner's span reaches a gRPC collector, the embedded
collector's per-rollout span counts, the default run id, the served-name passthrough and exit 1 when
nothing succeeded. No agent framework here: the live zero-code run is test_zero_code.py."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.rollout import RolloutConfig
from spanrl.rollout.process import agent_env, otlp_protocol
from spanrl.rollout.runner import resolve_run_id
from spanrl.rollout.runs import Attempt
from spanrl.rollout.services import Otlp, SpanCounts, started_server
from spanrl.rollout.spans import attempt_request, post_spans
from spanrl.rollout.tasks import Task
from tests.helpers.collector import inprocess_collector, make_traces

STALE = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
         "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector.prod:4317", "OTEL_SERVICE_NAME": "mine"}


def _attempt(rollout_id: str = "r.t.0") -> Attempt:
    return Attempt(Task(task_id="t", input="hi", line={"input": "hi"}), 0, 0, rollout_id)


def test_agent_env_sets_the_protocol_of_the_endpoint_over_stale_settings() -> None:
    """opentelemetry-distro defaults to gRPC: without the protocol every span went to the HTTP port and was lost."""
    env = agent_env(STALE, _attempt(), "http://127.0.0.1:4999", "http://127.0.0.1:8000/v1")
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4999"
    for kind in ("", "TRACES_", "LOGS_"):
        assert env[f"OTEL_EXPORTER_OTLP_{kind}PROTOCOL"] == "http/protobuf"
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://127.0.0.1:4999/v1/traces"
    assert env["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"] == "http://127.0.0.1:4999/v1/logs"
    assert env["OTEL_SERVICE_NAME"] == "mine"  # the user's own settings stay
    grpc = agent_env(STALE, _attempt(), "http://otel:4317", "http://p/v1", "grpc")
    assert grpc["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://otel:4317"
    assert grpc["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] == "grpc"


def test_otlp_protocol_inferred_from_the_port_unless_given() -> None:
    assert otlp_protocol("http://otel:4317", None) == "grpc"
    assert otlp_protocol("http://otel:4318", None) == "http/protobuf"
    assert otlp_protocol("https://otel.example.com", None) == "http/protobuf"
    assert otlp_protocol("http://otel:4317", "http/protobuf") == "http/protobuf"


def test_runner_span_reaches_a_grpc_collector(tmp_path: Path) -> None:
    att = _attempt("g.t.0")
    att.status, att.exit_code = "ok", 0

    async def go() -> tuple[str | None, str | None]:
        async with inprocess_collector(tmp_path) as (_, http, grpc):
            req = attempt_request(att, "g", 1, 2)
            sent = await asyncio.to_thread(post_spans, grpc, req, 10.0, "grpc")
            wrong = await asyncio.to_thread(post_spans, http, req, 5.0, "grpc")  # gRPC to the HTTP port
            return sent, wrong

    sent, wrong = asyncio.run(go())
    assert sent is None and wrong is not None and wrong.startswith("gRPC ")
    lines = (tmp_path / "otel" / "traces.jsonl").read_text().splitlines()
    (span,) = [s for line in lines for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"]
               for s in ss["spans"]]
    attrs = {a["key"]: a["value"] for a in span["attributes"]}
    assert span["name"] == "spanrl.rollout" and attrs["spanrl.rollout.ended"] == {"boolValue": True}


def test_span_counts_per_rollout_leave_out_the_runner_span() -> None:
    counts = SpanCounts()
    agent = make_traces(3, service="agent")
    agent.resource_spans[0].resource.attributes.add(key="spanrl.rollout_id").value.string_value = "a"
    per_span = make_traces(2, attrs={"spanrl.rollout_id": "b"})  # the key on the spans, not the resource
    runner = attempt_request(_attempt("c"), "run", 1, 2)
    server = make_traces(5, service="spanrl-serve")
    server.resource_spans[0].scope_spans[0].scope.name = "spanrl.serve"  # the server the runner started
    for req in (agent, per_span, runner, server, make_traces(4)):
        counts.observe("traces", req)
    counts.observe("logs", agent)
    assert (counts.get("a"), counts.get("b"), counts.get("c")) == (3, 2, 0)
    assert counts.unkeyed == 4  # an SDK that dropped OTEL_RESOURCE_ATTRIBUTES: said, not silently lost


def test_default_run_id_covers_command_policy_and_tasks(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"input": "a"}\n')

    def run_id(**kw) -> str:
        cfg = dict(tasks=tasks, n=1, command=["python", "agent.py"], data=tmp_path, policy_url="http://h:8000/v1",
                   adapter_id="base")
        return resolve_run_id(RolloutConfig(**{**cfg, **kw}))

    first = run_id()
    assert run_id() == first  # the same run resumes
    assert run_id(command=["opentelemetry-instrument", "python", "agent.py"]) != first
    assert run_id(policy_url="http://other:8000/v1") != first
    assert run_id(adapter_id="cycle-2") != first
    tasks.write_text('{"input": "b"}\n')
    assert run_id() != first


def test_exit_1_with_the_summary_when_no_attempt_succeeded(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t", "input": "x"}\n')
    args = ["rollout", "--data", str(tmp_path / "data"), "--tasks", str(tasks), "--n", "2", "--retries", "0",
            "--policy-url", "http://127.0.0.1:9/v1", "--adapter-id", "base", "--"]
    failed = CliRunner().invoke(cli, [*args, "sh", "-c", "exit 3"])
    assert failed.exit_code == 1, failed.output
    assert "0 ok, 2 failed" in failed.output and "no attempt succeeded" in failed.output
    ok = CliRunner().invoke(cli, [*args, "true"])
    assert ok.exit_code == 0, ok.output
    # no span of their own: counted, printed, and recorded in run.json and per attempt
    assert "2 attempt(s) (2 of them ok) sent no span of their own" in " ".join(ok.output.split())
    run = next(p for p in (tmp_path / "data" / "runs").iterdir()
               if json.loads((p / "run.json").read_text())["command"] == ["true"])
    last = json.loads((run / "run.json").read_text())["last_invocation"]
    assert last["attempts_without_agent_spans"] == 2 and last["agent_spans_checked"] is True
    ends = [json.loads(x) for x in (run / "attempts.jsonl").read_text().splitlines() if '"end"' in x]
    assert [e["agent_spans"] for e in ends] == [0, 0]


def test_with_an_external_otlp_the_span_check_says_it_cannot_be_done(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "t", "input": "x"}\n')
    out = CliRunner().invoke(cli, ["rollout", "--data", str(tmp_path), "--tasks", str(tasks), "--n", "1",
                                   "--policy-url", "http://127.0.0.1:9/v1", "--adapter-id", "base",
                                   "--otlp", "http://127.0.0.1:9", "--", "true"])
    assert out.exit_code == 0, out.output
    assert "not checked: spans go to --otlp" in out.output  # a table cell: the rest may wrap
    (run,) = (tmp_path / "runs").iterdir()
    last = json.loads((run / "run.json").read_text())["last_invocation"]
    assert last["agent_spans_checked"] is False and last["attempts_without_agent_spans"] is None
    assert last["otlp_protocol"] == "http/protobuf"


def test_served_names_reach_the_server_the_runner_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--served-model-name`` goes to the started ``spanrl serve`` (a stand-in that records its argv
    and environment and prints the ready line), with the run's OTLP endpoint and protocol."""
    record = tmp_path / "argv.json"
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n"
                    f"json.dump({{'argv': sys.argv[1:], 'protocol': os.environ.get('OTEL_EXPORTER_OTLP_PROTOCOL')}}, "
                    f"open({str(record)!r}, 'w'))\n"
                    "print('spanrl serve: m on http://127.0.0.1:9/v1 (adapter: none)', flush=True)\n"
                    "time.sleep(60)\n")
    fake.chmod(0o755)
    monkeypatch.setattr("spanrl.rollout.services.sys.executable", str(fake))
    with started_server(tmp_path, Path("m"), Otlp("http://127.0.0.1:4999"), None, ["gpt-4o-mini", "alias-2"],
                        tmp_path / "serve.log") as url:
        assert url == "http://127.0.0.1:9/v1"
    got = json.loads(record.read_text())
    argv = got["argv"]
    assert argv[:3] == ["-m", "spanrl", "serve"] and got["protocol"] == "http/protobuf"
    names = [argv[i + 1] for i, a in enumerate(argv) if a == "--served-model-name"]
    assert names == ["gpt-4o-mini", "alias-2"]


def test_bad_combinations_say_what_to_do(tmp_path: Path) -> None:
    base = dict(tasks=tmp_path / "t.jsonl", n=1, command=["x"], data=tmp_path)
    with pytest.raises(InputError, match="--otlp-protocol describes --otlp"):
        RolloutConfig(**base, policy_url="http://p/v1", otlp_protocol="grpc")
    with pytest.raises(InputError, match="choose one of http/protobuf"):
        RolloutConfig(**base, policy_url="http://p/v1", otlp="http://o:1", otlp_protocol="thrift")
    with pytest.raises(InputError, match="spanrl serve --served-model-name"):
        RolloutConfig(**base, policy_url="http://p/v1", served_model_names=["gpt-4o-mini"])
