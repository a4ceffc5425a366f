"""A LangGraph ReAct agent with one calculator tool, written the way LangGraph's docs show it.

No spanrl import, no OpenTelemetry code: ``ChatOpenAI`` reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
from the environment, the task arrives on stdin, the final answer goes to stdout. Telemetry, if any, is
added from outside (``opentelemetry-instrument python agent.py``), or not at all (behind
``spanrl gateway``). The reward comes from ``score.py`` through ``spanrl rollout --score``.

The prompt carries two worked examples as messages (LangGraph's callable ``prompt``): a 135M model
given a plain instruction never calls the tool; shown the exchange twice, it does. The examples are
ordinary LangChain messages; the server renders them in its own tool-call format.
"""

from __future__ import annotations

import ast
import operator
import os
import sys

from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.prebuilt import ToolNode, create_react_agent

SYSTEM = ("You are a math assistant. Call the calculator tool with the arithmetic expression, "
          "then reply with the final number only.")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


@tool
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


def _example(k: int, question: str, expression: str, result: str) -> list:
    call_id = f"call_example_{k}"
    return [("user", question),
            AIMessage(content="", tool_calls=[{"name": "calculator", "args": {"expression": expression},
                                               "id": call_id}]),
            ToolMessage(content=result, tool_call_id=call_id),
            AIMessage(content=result)]


EXAMPLES = [*_example(0, "A box holds 40 cards. 12 of them are taken out. How many cards stay in the box?",
                      "40 - 12", "28"),
            *_example(1, "Sam has 15 pens and gets 8 more. How many pens does Sam have now?", "15 + 8", "23")]


def prompt(state: dict) -> list:
    """The system message, the worked examples, then the conversation so far."""
    return [SystemMessage(SYSTEM), *EXAMPLES, *state["messages"]]


def main() -> None:
    question = sys.stdin.read().strip()
    model = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), max_tokens=48, max_retries=0)
    # handle_tool_errors: a tool's exception goes back to the model as the tool's (error) reply, not up to us
    agent = create_react_agent(model, ToolNode([calculator], handle_tool_errors=True), prompt=prompt)
    try:
        result = agent.invoke({"messages": [("user", question)]}, {"recursion_limit": 6})  # 3 model calls at most
    except GraphRecursionError:  # the model kept calling tools: no answer
        print("")
        return
    print(result["messages"][-1].content)


if __name__ == "__main__":
    main()
