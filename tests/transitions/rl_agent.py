"""Agents for the stage-2 tests: the real ``openai`` client, a real instrumentation library and real
OTLP export (B's ``tests/helpers/instrumented_agent.py`` sets those up), running a *plan* of several
rollouts in one process so the tests pay the import cost once.

    python -m tests.transitions.rl_agent --base-url URL --plan plan.json [--instrumentation openai-v2-latest]
        [--duplicate]

Each plan entry is one rollout (one trace): ``scenario`` single | tools | dynamic (``rounds`` user
turns, each user -> tool call -> tool -> answer) | two_agents (writer then checker under a team span) |
nested (outer -> inner agent) | orphan (a call under a span whose parent is never exported) |
engine (one call plus a serving-engine span with spanrl.* token ids and the same gen_ai.response.id);
``question``, ``rollout_id``, ``task_id``, ``session`` (session.id), ``tool_error``, and a reward as
``reward`` + ``reward_form``: emit (spanrl.emit_reward) | agl_annotation | agl_v02 | event | attribute |
genai_eval | openinference_eval | none. ``--duplicate`` exports every span twice (an exporter retry).
Prints one JSON line per rollout: {"trace_id", "calls", "index"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from tests.helpers.instrumented_agent import SYSTEM, TOOLS, _set_mode_env, instrument, setup_telemetry


class Agent:
    def __init__(self, client, tracer, model: str = "fake-model") -> None:
        self.client, self.tracer, self.model = client, tracer, model

    def chat(self, messages: list[dict], tools: bool = False):
        extra = {"tools": TOOLS} if tools else {}
        return self.client.chat.completions.create(model=self.model, messages=messages, temperature=0.5, **extra)

    def tool_round(self, messages: list[dict], tool_error: bool) -> int:
        """user -> tool call -> execute_tool span -> answer: 2 calls."""
        msg = self.chat(messages, tools=True).choices[0].message
        messages.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [tc.model_dump() for tc in msg.tool_calls or []]})
        for call in msg.tool_calls or []:
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                     "gen_ai.tool.call.id": call.id, "gen_ai.tool.call.arguments": call.function.arguments}
            with self.tracer.start_as_current_span(f"execute_tool {call.function.name}", attributes=attrs) as span:
                result = f"sunny in {json.loads(call.function.arguments)['query']}"
                if tool_error:
                    span.set_status(Status(StatusCode.ERROR, "tool failed"))
                    span.set_attribute("error.type", "ToolError")
                    result = "error: tool failed"
                span.set_attribute("gen_ai.tool.call.result", result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        answer = self.chat(messages, tools=True).choices[0].message
        messages.append({"role": "assistant", "content": answer.content})
        return 2

    def agent_span(self, name: str, extra: dict | None = None):
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **(extra or {})}
        return self.tracer.start_as_current_span(f"invoke_agent {name}", attributes=attrs)

    def run(self, plan: dict) -> int:
        q = plan.get("question", "What is the weather in Paris?")
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
        scenario = plan.get("scenario", "single")
        if scenario == "single":
            self.chat(messages)
            return 1
        if scenario == "tools":
            return self.tool_round(messages, plan.get("tool_error", False))
        if scenario == "dynamic":
            calls = 0
            for i in range(plan.get("rounds", 1)):
                if i:
                    messages.append({"role": "user", "content": f"And in city {i}?"})
                calls += self.tool_round(messages, plan.get("tool_error", False))
            return calls
        if scenario == "two_agents":
            with self.agent_span("writer"):
                self.chat(messages)
            with self.agent_span("checker"):
                self.chat(messages + [{"role": "user", "content": "Check the answer."}])
            with self.agent_span("writer"):
                self.chat(messages + [{"role": "user", "content": "Rewrite it."}])
            return 3
        if scenario == "nested":
            self.chat(messages)
            with self.agent_span("inner"):
                self.chat([{"role": "user", "content": "inner step"}])
                with self.agent_span("innermost"):
                    self.chat([{"role": "user", "content": "innermost step"}])
            self.chat(messages + [{"role": "user", "content": "outer again"}])
            return 4
        if scenario == "engine":  # the serving engine's own span, joined to the call by response id (docs/lake.md, token ids)
            resp = self.chat(messages)
            with self.tracer.start_as_current_span("chat fake-model (engine)", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.response.id": resp.id,
                    "spanrl.prompt_token_ids": [101, 102, 103], "spanrl.response_token_ids": [7, 8],
                    "spanrl.response_logprobs": [-0.25, -0.5], "spanrl.tokenizer": "fake"}):
                pass
            return 1
        if scenario == "orphan":
            self.chat(messages)
            with self.tracer.start_as_current_span("step"):
                lost = SpanContext(trace_id=trace.get_current_span().get_span_context().trace_id,
                                   span_id=int.from_bytes(os.urandom(8), "big") | 1, is_remote=False,
                                   trace_flags=TraceFlags(TraceFlags.SAMPLED))
                ctx = trace.set_span_in_context(NonRecordingSpan(lost))
                with self.tracer.start_as_current_span("orphaned work", context=ctx):
                    self.chat(messages + [{"role": "user", "content": "orphan call"}])
            return 2
        raise SystemExit(f"unknown scenario {scenario}")


def emit(tracer, root, form: str, value: float) -> None:
    """One reward in the requested encoding (all of docs/transitions.md's explicit forms)."""
    import spanrl

    if form == "emit":
        spanrl.emit_reward(value)
    elif form == "agl_annotation":
        with tracer.start_as_current_span("agentlightning.annotation", attributes={
                "agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": value,
                "agentlightning.reward.1.name": "style", "agentlightning.reward.1.value": 0.5}):
            pass
    elif form == "agl_v02":
        with tracer.start_as_current_span("agentlightning.reward", attributes={"reward": value}):
            pass
    elif form == "event":
        root.add_event("spanrl.reward", {"spanrl.reward": value, "spanrl.reward.name": "score"})
    elif form == "attribute":
        root.set_attribute("spanrl.reward", value)
    elif form == "genai_eval":
        root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "judge",
                                                    "gen_ai.evaluation.score.value": value})
    elif form == "openinference_eval":
        root.set_attribute("evaluations.0.evaluation.name", "judge")
        root.set_attribute("evaluations.0.evaluation.score", value)
    elif form != "none":
        raise SystemExit(f"unknown reward_form {form}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--plan", required=True)
    p.add_argument("--instrumentation", default="openai-v2-latest")
    p.add_argument("--duplicate", action="store_true")
    args = p.parse_args()
    tel = argparse.Namespace(protocol="http", service="rl-agent")
    _set_mode_env(args.instrumentation)
    tracer_provider, logger_provider = setup_telemetry(tel)
    if args.duplicate:  # a second exporter to the same collector: every span arrives twice
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/")
        tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    instrument(args.instrumentation, tracer_provider, logger_provider)

    import openai

    client = openai.OpenAI(base_url=args.base_url, api_key="test-key", max_retries=0)
    tracer = tracer_provider.get_tracer("rl_agent")
    agent = Agent(client, tracer)
    out = []
    for i, plan in enumerate(json.loads(open(args.plan).read())):
        extra = {k: v for k, v in (("spanrl.rollout_id", plan.get("rollout_id")),
                                   ("spanrl.task_id", plan.get("task_id")),
                                   ("session.id", plan.get("session"))) if v}
        with agent.agent_span(plan.get("agent", "solver"), extra) as root:
            calls = agent.run(plan)
            if plan.get("reward_form", "emit") != "none":
                emit(tracer, root, plan.get("reward_form", "emit"), plan.get("reward", 1.0))
            out.append({"index": i, "trace_id": format(root.get_span_context().trace_id, "032x"), "calls": calls})
    tracer_provider.shutdown()
    logger_provider.shutdown()
    for line in out:
        print(json.dumps(line))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
