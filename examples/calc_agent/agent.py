"""A small calculator agent: plain ``openai`` SDK + the official OpenTelemetry instrumentation.

It knows nothing about spanrl. Everything it tells the trainer travels as ordinary OTel spans,
configured by the standard environment variables:

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1  OPENAI_API_KEY=none
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318  OTEL_SERVICE_NAME=calc-agent
    OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only
    python agent.py --tasks tasks.jsonl --rollouts 4 --out results.jsonl

or one task per process, the way ``spanrl rollout`` runs it (the demo does): the runner sets
``OTEL_RESOURCE_ATTRIBUTES`` to carry the rollout and task ids, so the agent names no rollout itself
and prints its result line on stdout:

    spanrl rollout --tasks tasks.jsonl --n 4 --policy-url URL -- \
        python agent.py --tasks tasks.jsonl --task-id {task_id}

One rollout = one root span ``invoke_agent calc`` (``spanrl.rollout_id``, ``spanrl.task_id``):
call 1 asks for the calculator, the tool runs in an ``execute_tool calculator`` span, call 2 answers
with the number. The reward is a child span named ``spanrl.reward`` written with the OTel API: 1.0
for the right number, 0.2 for a tool call that ran but a wrong answer, 0.0 otherwise.

The tool fails, with status ERROR on its span, in every way the model can cause: a call to a tool
that does not exist, arguments that are not JSON or do not match the declared schema (missing or
extra keys, a non-string expression), an expression that is not arithmetic, and a ``<tool_call>``
block the server could not parse (the reply then carries it as text). The agent tells the model
what went wrong and lets it try again, so spanrl's AIR rules (tool_error, bad_tool_arguments) see
each failure and the call that caused it.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from openai import OpenAI
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

SYSTEM = "You are a math assistant. Call the calculator tool with the arithmetic expression, then reply with the final number only."
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression like 12 * 7",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
}
# Two worked examples in the conversation: the server's chat template renders them in its own
# tool-call format, so the model sees exactly the syntax its parser expects.
EXAMPLES: list[dict[str, Any]] = []
for _k, (_q, _e, _r) in enumerate(
    [
        ("A box holds 40 cards. 12 of them are taken out. How many cards stay in the box?", "40 - 12", "28"),
        ("Sam has 15 pens and gets 8 more. How many pens does Sam have now?", "15 + 8", "23"),
    ]
):
    _call = {"id": f"call_ex{_k}", "type": "function",
             "function": {"name": "calculator", "arguments": json.dumps({"expression": _e})}}
    EXAMPLES += [
        {"role": "user", "content": _q},
        {"role": "assistant", "content": "", "tool_calls": [_call]},
        {"role": "tool", "tool_call_id": f"call_ex{_k}", "content": _r},
        {"role": "assistant", "content": _r},
    ]

REWARD_CORRECT, REWARD_TOOL_OK = 1.0, 0.2
MAX_LLM_CALLS = 3
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}

tracer = trace.get_tracer("calc_agent")


def calculator(expression: str) -> str:
    """Evaluate + - * / and parentheses on numbers; raise ValueError on anything else."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"not an arithmetic expression: {expression!r}")

    try:
        value = ev(ast.parse(str(expression).replace("x", "*").replace(",", ""), mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ValueError(f"cannot evaluate {expression!r}: {exc}") from exc
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def check_arguments(arguments: str | None) -> str:
    """The ``expression`` of a calculator call whose arguments match CALCULATOR's schema, else ValueError."""
    try:
        args = json.loads(arguments or "")
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not JSON ({exc.msg}): {arguments!r}") from None
    if not isinstance(args, dict):
        raise ValueError(f"arguments must be a JSON object like {{\"expression\": \"12 * 7\"}}, got {arguments!r}")
    extra = set(args) - {"expression"}
    if extra or "expression" not in args:
        raise ValueError(f"the calculator takes exactly one argument, expression; got {sorted(args)}")
    if not isinstance(args["expression"], str):
        raise ValueError(f"expression must be a string, got {args['expression']!r}")
    return args["expression"]


def run_tool(name: str, call_id: str, arguments: str | None) -> tuple[str, bool]:
    """Run one tool call inside an ``execute_tool`` span; errors set the span status to ERROR."""
    with tracer.start_as_current_span(f"execute_tool {name}", record_exception=False, set_status_on_exception=False) as span:
        span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                             "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": arguments or ""})
        try:
            if name != "calculator":
                raise ValueError(f"unknown tool {name!r}; the only tool is calculator")
            result = calculator(check_arguments(arguments))
        except ValueError as exc:  # the model's mistake, not ours
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.set_attribute("error.type", type(exc).__name__)
            return f"error: {exc}", False
        span.set_attribute("gen_ai.tool.call.result", result)
        return result, True


def unparsed_tool_call(text: str | None) -> tuple[str, str] | None:
    """(tool name, raw arguments) of a ``<tool_call>`` block left in the reply's text: the server
    could not parse it (not JSON, no name), so it reached us as content. The model meant a tool call."""
    if not text or "<tool_call>" not in text:
        return None
    body = text.split("<tool_call>", 1)[1].split("</tool_call>", 1)[0].strip()
    name = re.search(r'"name"\s*:\s*"([^"]*)"', body)
    args = re.search(r'"arguments"\s*:\s*(.*?)\s*}?\s*$', body, re.S)
    return (name.group(1) if name and name.group(1) else "calculator"), (args.group(1) if args else body)


def final_number(text: str | None) -> float | None:
    """The last number in the model's answer (commas allowed), or None."""
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text or "")
    return float(found[-1].replace(",", "")) if found else None


def rollout(client: OpenAI, task: dict[str, Any], rollout_id: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """One episode: ask, run the tools the model asks for, answer, score, emit the reward span.
    ``rollout_id`` None: the resource attributes name the rollout (one rollout per process)."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": args.agent_name,
             "spanrl.task_id": task["task_id"], "spanrl.split": args.split}
    if rollout_id is not None:
        attrs["spanrl.rollout_id"] = rollout_id
    with tracer.start_as_current_span(f"invoke_agent {args.agent_name}", attributes=attrs) as root:
        messages = [{"role": "system", "content": SYSTEM}, *EXAMPLES, {"role": "user", "content": task["question"]}]
        tool_ok = tool_errors = llm_calls = 0
        answer_text = None
        for _ in range(MAX_LLM_CALLS):
            llm_calls += 1
            reply = client.chat.completions.create(
                model=args.model, messages=messages, tools=[CALCULATOR],
                temperature=args.temperature, max_tokens=args.max_tokens,
            ).choices[0].message
            broken = None if reply.tool_calls else unparsed_tool_call(reply.content)
            if broken is not None:  # a tool call the server could not read: a failed tool call
                result, _ = run_tool(broken[0], f"unparsed-{llm_calls}", broken[1])
                tool_errors += 1
                messages += [{"role": "assistant", "content": reply.content or ""},
                             {"role": "user", "content": f"That tool call could not be read ({result}). "
                                                         "Call the calculator again with valid JSON."}]
                continue
            if not reply.tool_calls:
                answer_text = reply.content
                break
            calls = [c.model_dump(include={"id", "type", "function"}) for c in reply.tool_calls]
            messages.append({"role": "assistant", "content": reply.content or "", "tool_calls": calls})
            for call in reply.tool_calls:
                result, ok = run_tool(call.function.name, call.id, call.function.arguments)
                tool_ok, tool_errors = tool_ok + ok, tool_errors + (not ok)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        value = final_number(answer_text)
        correct = value is not None and abs(value - float(task["answer"])) < 1e-6
        reward = REWARD_CORRECT if correct else REWARD_TOOL_OK if tool_ok else 0.0
        with tracer.start_as_current_span("spanrl.reward", attributes={"spanrl.reward": reward, "spanrl.reward.name": "correct"}):
            pass
        root.set_attribute("calc.correct", correct)
    return {"rollout_id": rollout_id, "task_id": task["task_id"], "split": args.split, "reward": reward,
            "correct": correct, "llm_calls": llm_calls, "tool_ok": tool_ok, "tool_errors": tool_errors,
            "answer": answer_text, "expected": task["answer"]}


def setup_telemetry() -> TracerProvider:
    """The standard SDK lines: OTLP exporter from env vars + the official OpenAI instrumentation."""
    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    # Bulk rollouts: a deep queue so the SDK never drops spans (its default 2048 does under load).
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), max_queue_size=100_000))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    return provider


def make_client() -> OpenAI:
    """The openai client, as any agent makes one: nothing propagates the trace to the server. Its span still
    joins the call: ``spanrl rollout`` hands each attempt a per-attempt base URL of the server (its rollout id
    and the attempt's span), and the client's record and the server's share ``gen_ai.response.id``."""
    # A long timeout and no retries: a busy CPU server queues requests; a retry would only add load.
    return OpenAI(timeout=3600, max_retries=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run calculator-agent rollouts (one JSON task per line).")
    parser.add_argument("--tasks", required=True, help="JSONL file of {task_id, question, answer}")
    parser.add_argument("--rollouts", type=int, default=1, help="rollouts per task (a group)")
    parser.add_argument("--out", default="-", help="JSONL file the results are appended to (default: stdout)")
    parser.add_argument("--task-id", default=None,
                        help="run only this task of --tasks, once (a runner such as `spanrl rollout` gives each "
                             "rollout its own process and its id in OTEL_RESOURCE_ATTRIBUTES)")
    parser.add_argument("--split", default="train", help="tag written on every rollout (spanrl.split)")
    parser.add_argument("--agent-name", default="calc", help="gen_ai.agent.name of the rollouts")
    parser.add_argument("--run-id", default="run", help="prefix of the rollout ids (unique per run)")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "default"))
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)

    with open(args.tasks, encoding="utf-8") as fh:
        tasks = [json.loads(line) for line in fh if line.strip()]
    if args.task_id is not None:
        tasks = [t for t in tasks if t["task_id"] == args.task_id]
        if not tasks:
            parser.error(f"--task-id {args.task_id!r} is not in {args.tasks}")
        jobs: list[tuple[dict[str, Any], str | None]] = [(tasks[0], None)]
    else:
        jobs = [(t, f"{args.run_id}-{t['task_id']}-r{k}") for t in tasks for k in range(args.rollouts)]
    provider = setup_telemetry()
    client = make_client()
    lock = threading.Lock()
    failed = False
    out = sys.stdout if args.out == "-" else open(args.out, "a", encoding="utf-8")  # noqa: SIM115 - closed below
    with ThreadPoolExecutor(args.concurrency) as pool:

        def one(job: tuple[dict[str, Any], str | None]) -> None:
            nonlocal failed
            try:
                result = rollout(client, job[0], job[1], args)
            except Exception as exc:  # a failed request is a failed rollout, not a crashed batch
                result = {"rollout_id": job[1], "task_id": job[0]["task_id"], "split": args.split,
                          "reward": None, "error": f"{type(exc).__name__}: {exc}"}
                failed = True
                print(f"rollout of {job[0]['task_id']} failed: {result['error']}", file=sys.stderr, flush=True)
            with lock:
                out.write(json.dumps(result) + "\n")
                out.flush()
                if out is not sys.stdout:
                    print(f"done {result['rollout_id']} reward={result['reward']}", flush=True)

        list(pool.map(one, jobs))
    if out is not sys.stdout:
        out.close()
    provider.shutdown()  # flushes the span queue to the collector
    return 1 if failed and args.task_id is not None else 0  # one rollout per process: its exit code says how it went


if __name__ == "__main__":
    sys.exit(main())
