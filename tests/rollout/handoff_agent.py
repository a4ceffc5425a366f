"""A triage agent that hands off to a math agent with one tool, written as the OpenAI Agents SDK's
documentation shows it (a chat-completions model over an ``AsyncOpenAI`` client that reads
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``): no spanrl import, no OpenTelemetry code. Traced only from
outside, by ``opentelemetry-instrument python handoff_agent.py`` with every installed instrumentor.
Reads the task on stdin, prints the final output.

The handoff tool ``transfer_to_math_agent`` takes no arguments: the model calls it with ``{}``, which
OpenInference records as a tool call with an id and a name but no arguments attribute (issue 42).
"""

from __future__ import annotations

import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI


@function_tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def main() -> None:
    question = sys.stdin.read().strip()
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI(max_retries=0))
    math_agent = Agent(name="math_agent", instructions="Solve arithmetic with the add tool.",
                       model=model, tools=[add])
    triage = Agent(name="triage_agent", instructions="Hand arithmetic questions to the math agent.",
                   model=model, handoffs=[math_agent])
    print(Runner.run_sync(triage, question).final_output)


if __name__ == "__main__":
    main()
