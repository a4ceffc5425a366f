"""Reward styles beyond spanrl's own: ``--reward-key`` attributes (spans, span events, log records),
Agent Lightning's AgentOps v0.1 outputs, GenAI evaluation spans and labels, value parsing, and
NaN/Inf rejection (docs/transitions.md, "Rewards").

The first group exports real spans and log records with the OpenTelemetry SDK (OTLP/HTTP into the
embedded collector) and runs the real CLI on them; the rest are hand-built lakes for edge cases.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.transitions import read_snapshot
from spanrl.transitions.build import build_transitions, open_lake
from spanrl.transitions.config import make_ingest_config
from spanrl.transitions.rollouts import register_stage2
from tests.transitions.lakefake import FakeLake, assistant, new_id, user

KEYS = "eval.score,reward"


# ---- real OpenTelemetry SDK -> collector -> CLI ------------------------------------------------------

def _export_rollouts(endpoint: str) -> dict[str, dict]:
    """One rollout per reward style, written with the OTel SDK; returns {rollout: span ids by role}."""
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create({"service.name": "reward-styles"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")))
    tracer = tracer_provider.get_tracer("reward-styles")
    logger = logger_provider.get_logger("reward-styles")
    ids: dict[str, dict] = {}

    def sid(span) -> str:
        return f"{span.get_span_context().span_id:016x}"

    def rollout(rid: str, body) -> None:
        with tracer.start_as_current_span("invoke_agent solver", attributes={
                "spanrl.rollout_id": rid, "spanrl.task_id": "styles", "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "solver"}) as root:
            with tracer.start_as_current_span("chat fake-model", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model",
                    "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                        {"type": "text", "content": f"question {rid}"}]}]),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                           "parts": [{"type": "text", "content": "answer"}]}])}) as call:
                pass
            ids[rid] = {"root": sid(root), "call": sid(call)}
            body(root, call, ids[rid])

    def key_attribute(root, call, got) -> None:  # --reward-key eval.score on a grader span
        with tracer.start_as_current_span("grade", attributes={"eval.score": 0.75}) as grade:
            got["reward"] = sid(grade)

    def key_event(root, call, got) -> None:  # --reward-key reward on a span-event attribute (a string)
        root.add_event("graded", {"reward": "0.5", "note": "string rewards are parsed"})

    def key_log(root, call, got) -> None:  # --reward-key eval.score on a log record inside the root span
        logger.emit(body="graded", severity_number=SeverityNumber.INFO, attributes={"eval.score": 1})

    def agentops(root, call, got) -> None:  # AgentOps v0.1 (@reward): primary, beats the later key reward
        with tracer.start_as_current_span("compute_reward.task", attributes={
                "agentops.span.kind": "task", "agentops.task.output": json.dumps({"type": "reward", "value": 0.9})}) as r:
            got["reward"] = sid(r)
        with tracer.start_as_current_span("grade", attributes={"eval.score": 0.1}):
            pass

    def agentops_entity(root, call, got) -> None:  # entity output; a non-reward task output is no reward
        with tracer.start_as_current_span("reward.entity", attributes={
                "agentops.task.output": json.dumps({"type": "text", "value": "hello"}),
                "agentops.entity.output": json.dumps({"type": "reward", "value": 0.3})}) as r:
            got["reward"] = sid(r)

    def eval_span(root, call, got) -> None:  # a GenAI evaluation span under the evaluated call
        from opentelemetry import trace

        with trace.use_span(call, end_on_exit=False), tracer.start_as_current_span(
                "gen_ai.evaluation.result", attributes={"gen_ai.evaluation.name": "accuracy",
                                                        "gen_ai.evaluation.score.value": 0.6}) as ev:
            got["reward"] = sid(ev)

    def eval_labels(root, call, got) -> None:  # labels only: a span named `evaluation`, then a log event
        with tracer.start_as_current_span("evaluation", attributes={
                "gen_ai.evaluation.name": "format", "gen_ai.evaluation.score.label": "fail"}) as ev:
            got["reward"] = sid(ev)
        logger.emit(event_name="gen_ai.evaluation.result", attributes={
            "gen_ai.evaluation.name": "verdict", "gen_ai.evaluation.score.label": "Pass"})

    def nan(root, call, got) -> None:  # a valid reward, then NaN and +Inf ones: rejected, 0.2 stays final
        with tracer.start_as_current_span("spanrl.reward", attributes={"spanrl.reward": 0.2}):
            pass
        with tracer.start_as_current_span("spanrl.reward", attributes={"spanrl.reward": math.nan}):
            pass
        root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "judge",
                                                    "gen_ai.evaluation.score.value": math.inf})

    for rid, body in [("key-attr", key_attribute), ("key-event", key_event), ("key-log", key_log),
                      ("agentops", agentops), ("agentops-entity", agentops_entity), ("eval-span", eval_span),
                      ("eval-labels", eval_labels), ("nan", nan)]:
        rollout(rid, body)
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return ids


@pytest.fixture(scope="module")
def sdk_lake(tmp_path_factory):
    """DATA with the lake of ``_export_rollouts`` (stage 1 only) and the span ids it wrote."""
    from tests.helpers.collector import running_collector

    data = tmp_path_factory.mktemp("styles") / "data"
    with running_collector(data) as ep:
        ids = _export_rollouts(ep.http)
    res = CliRunner().invoke(cli, ["ingest", "--data", str(data), "--no-transitions"])
    assert res.exit_code == 0, res.output
    return data, ids


def _finals(data: Path) -> dict[str, float]:
    table, _ = read_snapshot(data)
    return dict(zip(table["rollout_id"].to_pylist(), table["final_reward"].to_pylist(), strict=True))


def test_every_style_from_the_otel_sdk(sdk_lake) -> None:
    data, ids = sdk_lake
    cfg = make_ingest_config(data=data, settle_s=0, reward_keys=(KEYS,))
    con = open_lake(cfg)
    register_stage2(con, cfg, materialize=True, readable=(data / "lake",))  # what the builder reads (spanrl sql: next test)
    rows = con.execute("""SELECT rollout_id, name, value, source, target_span_id FROM rewards
                          ORDER BY rollout_id, ts_ns""").fetchall()
    finals = dict(con.execute("SELECT rollout_id, final_reward FROM rollouts").fetchall())
    by: dict[str, list] = {}
    for rid, *rest in rows:
        by.setdefault(rid, []).append(tuple(rest))
    assert by["key-attr"] == [("eval.score", 0.75, "attribute", ids["key-attr"]["reward"])]
    assert by["key-event"] == [("reward", 0.5, "event", ids["key-event"]["root"])]
    assert by["key-log"] == [("eval.score", 1.0, "event", ids["key-log"]["root"])]
    assert by["agentops"][0] == ("primary", 0.9, "span", ids["agentops"]["root"])
    assert by["agentops"][1][:3] == ("eval.score", 0.1, "attribute")
    assert by["agentops-entity"] == [("primary", 0.3, "span", ids["agentops-entity"]["root"])]
    assert by["eval-span"] == [("accuracy", 0.6, "span", ids["eval-span"]["call"])]  # the evaluated call
    assert by["eval-labels"] == [("format", 0.0, "span", ids["eval-labels"]["root"]),
                                 ("verdict", 1.0, "event", ids["eval-labels"]["root"])]
    assert sorted((r[:3] for r in by["nan"]), key=str) == [
        ("judge", None, "rejected"), ("reward", 0.2, "span"), ("reward", None, "rejected")]
    # primary first (AgentOps), else the latest by time; rejected rewards never win
    assert finals == {"key-attr": 0.75, "key-event": 0.5, "key-log": 1.0, "agentops": 0.9,
                      "agentops-entity": 0.3, "eval-span": 0.6, "eval-labels": 1.0, "nan": 0.2}


def test_reward_key_flag_and_toml_reach_the_snapshot(sdk_lake) -> None:
    data, _ = sdk_lake
    runner = CliRunner()
    plain = runner.invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s"])
    assert plain.exit_code == 0, plain.output
    assert "rejected 2" in plain.output  # NaN and Inf, counted in the summary
    without = _finals(data)
    assert not {"key-attr", "key-event", "key-log"} & set(without)  # no key: those rollouts have no reward
    assert without["agentops"] == 0.9 and without["nan"] == 0.2
    flagged = runner.invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s",
                                  "--reward-key", "eval.score", "--reward-key", "reward"])
    assert flagged.exit_code == 0, flagged.output
    with_flag = _finals(data)
    assert with_flag == {**without, "key-attr": 0.75, "key-event": 0.5, "key-log": 1.0}
    _, manifest = read_snapshot(data)
    assert manifest["config"]["reward_keys"] == ["eval.score", "reward"]
    # the same from spanrl.toml: the builder and `spanrl sql` agree
    (data / "spanrl.toml").write_text('[ingest]\nsettle_s = 0\nreward_keys = "eval.score, reward"\n')
    try:
        toml = runner.invoke(cli, ["transitions", "build", "--data", str(data)])
        assert toml.exit_code == 0, toml.output
        assert "unchanged" in toml.output and _finals(data) == with_flag
        out = runner.invoke(cli, ["sql", "--data", str(data), "--format", "json",
                                  "select count(*) AS n from rewards where name = 'eval.score'"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.output.splitlines()[0])["n"] == 3
    finally:
        (data / "spanrl.toml").unlink()


# ---- hand-built lakes: value parsing, labels, double counting, config ---------------------------------

def _rewards(tmp_path: Path, build, **cfg) -> tuple[list[tuple], dict]:
    """Build one rollout with ``build(lake, trace, root)``; returns its rewards (name, value, source)
    without AIR, and the build stats."""
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent a", 0, 10_000)
    lake.llm_call(tr, 10, 100, root, [user("q")], assistant("a"), agent="a")
    build(lake, tr, root)
    con = lake.connect()
    result = build_transitions(make_ingest_config(data=lake.data, settle_s=0, **cfg), con=con)
    rows = con.execute("""SELECT name, value, source FROM rewards WHERE source <> 'air'
                          ORDER BY ts_ns, name""").fetchall()
    final = con.execute("SELECT final_reward FROM rollouts").fetchall()[0][0]
    return rows, {**result.stats, "final": final, "rows": result.rows}


@pytest.mark.parametrize("raw, value", [
    (True, 1.0), (False, 0.0), ("true", 1.0), ("FALSE", 0.0), ("1.0", 1.0), (" 2 ", 2.0), ("-0.5", -0.5),
    (3, 3.0), ("pass", 1.0), ("Incorrect", 0.0), ("not relevant", 0.0),
    ("nan", None), ("NaN", None), ("inf", None), ("-Infinity", None), ("good job", None), ("", None),
])
def test_reward_value_parsing(tmp_path: Path, raw, value) -> None:
    rows, stats = _rewards(tmp_path, lambda lake, tr, root: lake.span(
        tr, "spanrl.reward", 200, 200, root, attributes={"spanrl.reward": raw}))
    assert rows == [("reward", value, "span" if value is not None else "rejected")]
    assert stats["final"] == value
    assert stats["rows"] == (1 if value is not None else 0)  # no finite reward: dropped, never NaN


def test_rejected_reward_leaves_advantages_finite(tmp_path: Path) -> None:
    def build(lake, tr, root):
        lake.span(tr, "spanrl.reward", 200, 200, root, attributes={"spanrl.reward": 0.4, "spanrl.reward.name": "primary"})
        lake.span(tr, "judge", 300, 300, root, attributes={"spanrl.reward": "Infinity", "spanrl.reward.name": "primary"})
    rows, stats = _rewards(tmp_path, build, advantage="none")
    assert rows == [("primary", 0.4, "span"), ("primary", None, "rejected")]
    assert stats["final"] == 0.4 and stats["rewards_by_source"] == {"rejected": 1, "span": 1}
    assert stats["reward"]["max"] == 0.4


@pytest.mark.parametrize("attrs, expected", [
    ({"gen_ai.evaluation.name": "j", "gen_ai.evaluation.score.value": 4.0, "gen_ai.evaluation.score.label": "fail"},
     ("j", 4.0)),  # a numeric value wins over the label
    ({"gen_ai.evaluation.name": "j", "gen_ai.evaluation.score.label": "correct"}, ("j", 1.0)),
    ({"gen_ai.evaluation.name": "j", "gen_ai.evaluation.score.label": "not_relevant"}, ("j", 0.0)),
    ({"gen_ai.evaluation.score.value": "0.25"}, ("reward", 0.25)),
    ({"gen_ai.evaluation.name": "j", "gen_ai.evaluation.score.label": "4 stars"}, ("j", None)),
])
def test_genai_evaluation_event_values_and_labels(tmp_path: Path, attrs: dict, expected: tuple) -> None:
    rows, _ = _rewards(tmp_path, lambda lake, tr, root: lake.span(
        tr, "judge", 200, 210, root, events=[{"name": "gen_ai.evaluation.result", "time_ns": 0, "attributes": attrs}]))
    assert rows == [(*expected, "event" if expected[1] is not None else "rejected")]


def test_genai_evaluation_attributes_on_the_evaluated_span(tmp_path: Path) -> None:
    """A span that is not an evaluation span but carries the attributes: source attribute, target itself."""
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent a", 0, 10_000)
    call = lake.llm_call(tr, 10, 100, root, [user("q")], assistant("a"), agent="a", attributes={
        "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.8})
    ev = lake.span(tr, "evaluate answer", 200, 210, call, attributes={"gen_ai.evaluation.score.label": "passed"})
    con = lake.connect()
    build_transitions(make_ingest_config(data=lake.data, settle_s=0), con=con)
    assert con.execute("""SELECT name, value, source, span_id, target_span_id FROM rewards WHERE source <> 'air'
                          ORDER BY ts_ns""").fetchall() == [
        ("relevance", 0.8, "attribute", call, call), ("evaluation", 1.0, "span", ev, call)]


def test_reward_keys_do_not_double_count_built_ins(tmp_path: Path) -> None:
    def build(lake, tr, root):
        lake.span(tr, "agentlightning.reward", 200, 200, root, attributes={"reward": 0.7})
        lake.span(tr, "judge", 300, 300, root, attributes={"spanrl.reward": 0.1, "reward": 0.2},
                  events=[{"name": "gen_ai.evaluation.result", "time_ns": 0,
                           "attributes": {"gen_ai.evaluation.score.value": 0.3, "reward": "0.4"}}])
        lake.log_event(tr, root, 400, "", {"reward": "false", "other": 1})
        lake.log_event(tr, root, 500, "", {"unrelated": "reward"})  # the key's text, but not as a key
    rows, stats = _rewards(tmp_path, build, reward_keys=["reward, spanrl.reward", "gen_ai.evaluation.score.value"])
    assert sorted(rows) == sorted([("primary", 0.7, "span"), ("reward", 0.1, "attribute"), ("reward", 0.2, "attribute"),
                                   ("reward", 0.3, "event"), ("reward", 0.4, "event"), ("reward", 0.0, "event")])
    assert stats["final"] == 0.7  # the Agent Lightning primary


def test_reward_keys_config(tmp_path: Path) -> None:
    assert make_ingest_config(data=tmp_path, reward_keys=("a.b, c", "a.b", " d ")).reward_keys == ["a.b", "c", "d"]
    assert make_ingest_config(data=tmp_path, reward_keys=()).reward_keys == []
    (tmp_path / "spanrl.toml").write_text('[ingest]\nreward_keys = ["eval.score", "judge.pass"]\n')
    assert make_ingest_config(data=tmp_path).reward_keys == ["eval.score", "judge.pass"]
    assert make_ingest_config(data=tmp_path, reward_keys=()).reward_keys == ["eval.score", "judge.pass"]
    assert make_ingest_config(data=tmp_path, reward_keys=("x",)).reward_keys == ["x"]  # the flag wins
    (tmp_path / "spanrl.toml").write_text("[ingest]\nreward_keys = 3\n")
    with pytest.raises(InputError, match="reward_keys 3"):
        make_ingest_config(data=tmp_path)
    (tmp_path / "spanrl.toml").unlink()
    with pytest.raises(InputError, match="quotes"):
        make_ingest_config(data=tmp_path, reward_keys=('a"b',))
    result = CliRunner().invoke(cli, ["transitions", "build", "--data", str(tmp_path), "--reward-key", "x\\y"])
    assert result.exit_code == 2 and "--reward-key" in result.output


def test_evaluation_log_without_span_finds_its_call_by_response_id(tmp_path: Path) -> None:
    """GenAI semconv: an evaluation that cannot be parented to the evaluated span sets gen_ai.response.id."""
    lake = FakeLake(tmp_path)
    tr = new_id(32)
    root = lake.span(tr, "invoke_agent a", 0, 10_000)
    call = lake.llm_call(tr, 10, 100, root, [user("q")], assistant("a"), agent="a", response_id="chatcmpl-7")
    lake.log_event(None, None, 20_000, "gen_ai.evaluation.result", {
        "gen_ai.evaluation.name": "judge", "gen_ai.evaluation.score.value": 0.4, "gen_ai.response.id": "chatcmpl-7"})
    lake.log_event(None, None, 20_000, "gen_ai.evaluation.result", {  # names no known call: no rollout, dropped
        "gen_ai.evaluation.name": "judge", "gen_ai.evaluation.score.value": 0.9, "gen_ai.response.id": "other"})
    con = lake.connect()
    build_transitions(make_ingest_config(data=lake.data, settle_s=0), con=con)
    assert con.execute("""SELECT trace_id, rollout_id, name, value, source, target_span_id FROM rewards
                          WHERE source <> 'air'""").fetchall() == [(tr, tr, "judge", 0.4, "event", call)]
    assert con.execute("SELECT final_reward FROM rollouts").fetchall() == [(0.4,)]


def test_reward_attributes_on_any_event_or_log_record(tmp_path: Path) -> None:
    """spanrl.reward / gen_ai.evaluation.score.* count on events and log records of any name."""
    def build(lake, tr, root):
        lake.span(tr, "judge", 200, 210, root, events=[
            {"name": "scored", "time_ns": 0, "attributes": {"spanrl.reward": 0.3, "spanrl.reward.name": "fmt"}},
            {"name": "exception", "time_ns": 0, "attributes": {"exception.message": "spanrl.reward missing"}}])
        lake.log_event(tr, root, 300, "", {"gen_ai.evaluation.name": "judge", "gen_ai.evaluation.score.label": "yes"})
        lake.log_event(tr, root, 400, "", {"note": "gen_ai.evaluation.score.value is not set here"})
    rows, stats = _rewards(tmp_path, build)
    assert rows == [("fmt", 0.3, "event"), ("judge", 1.0, "event")]
    assert stats["final"] == 1.0
