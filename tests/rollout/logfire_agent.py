"""A Pydantic AI agent with one tool, traced by Logfire the way Logfire's documentation shows it for an
OpenTelemetry backend of one's own: ``logfire.configure(send_to_logfire=False)`` and
``logfire.instrument_pydantic_ai()``; Logfire exports to ``OTEL_EXPORTER_OTLP_ENDPOINT``. No spanrl
import. Reads the task on stdin, prints the answer."""

from __future__ import annotations

import os
import sys

import logfire
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def main() -> None:
    logfire.configure(send_to_logfire=False, console=False, service_name="logfire-agent")
    logfire.instrument_pydantic_ai()
    provider = OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "x"))
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), name="math_bot",
                  system_prompt="Use the add tool.", tools=[add])
    print(agent.run_sync(sys.stdin.read().strip()).output)


if __name__ == "__main__":
    main()
