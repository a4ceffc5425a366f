"""A triage agent that hands arithmetic to a math agent with a calculator tool, written the way the OpenAI
Agents SDK's docs show it (``OpenAIChatCompletionsModel`` over an ``AsyncOpenAI`` client that reads
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``).

No spanrl import, no OpenTelemetry code: telemetry, if any, comes from outside
(``opentelemetry-instrument python agent.py``), or from ``spanrl gateway`` in front of the model. The task
arrives on stdin, the final answer goes to stdout; ``score.py`` rewards it through ``spanrl rollout --score``.

Two worked examples go in as conversation history (the SDK's list input), each showing the whole path:
hand off, call the calculator, answer with the number. A 135M model needs them to use either tool.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import sys

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool
from agents.exceptions import AgentsException
from openai import AsyncOpenAI

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


@function_tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression like 12 * 7."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"not an arithmetic expression: {expression!r}")

    value = ev(ast.parse(expression.replace("x", "*").replace(",", ""), mode="eval").body)
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def _example(k: int, question: str, expression: str, result: str) -> list[dict]:
    handoff, calc = f"call_handoff_{k}", f"call_calc_{k}"
    return [
        {"role": "user", "content": question},
        {"type": "function_call", "call_id": handoff, "name": "transfer_to_math_agent", "arguments": "{}"},
        {"type": "function_call_output", "call_id": handoff, "output": json.dumps({"assistant": "math_agent"})},
        {"type": "function_call", "call_id": calc, "name": "calculator",
         "arguments": json.dumps({"expression": expression})},
        {"type": "function_call_output", "call_id": calc, "output": result},
        {"role": "assistant", "content": result},
    ]


EXAMPLES = [*_example(0, "A box holds 40 cards. 12 of them are taken out. How many cards stay in the box?",
                      "40 - 12", "28"),
            *_example(1, "Sam has 15 pens and gets 8 more. How many pens does Sam have now?", "15 + 8", "23")]


def main() -> None:
    question = sys.stdin.read().strip()
    model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                                       openai_client=AsyncOpenAI(max_retries=0))
    settings = ModelSettings(max_tokens=48)
    math_agent = Agent(name="math_agent", model=model, model_settings=settings, tools=[calculator],
                       instructions="Call the calculator tool with the arithmetic expression, "
                                    "then reply with the final number only.")
    triage = Agent(name="triage_agent", model=model, model_settings=settings, handoffs=[math_agent],
                   instructions="You route questions. Hand every arithmetic question to the math agent.")
    try:
        result = Runner.run_sync(triage, [*EXAMPLES, {"role": "user", "content": question}], max_turns=4)
    except AgentsException:  # too many turns, or a reply the SDK cannot use: no answer
        print("")
        return
    print(result.final_output)


if __name__ == "__main__":
    main()
