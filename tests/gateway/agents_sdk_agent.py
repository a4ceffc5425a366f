"""An agent on the OpenAI Agents SDK exactly as its documentation shows it: ``Agent(...,
model="gpt-4.1-mini")``, the SDK's default model class, which calls the **Responses API** over an
``AsyncOpenAI`` client reading ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. No spanrl import, no
OpenTelemetry: the gateway is what records it. A triage agent hands off to a solver agent that has
one tool. The task is run twice in one process (interpreter start-up is most of a test's time):
as it came with ``Runner.run``, then as ``stream <task>`` with ``Runner.run_streamed``.
Reads the task on stdin, prints both final outputs.
"""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled


@function_tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


async def main() -> None:
    set_tracing_disabled(True)  # the SDK's own trace export goes to api.openai.com: nothing to reach here
    question = sys.stdin.read().strip()
    solver = Agent(name="solver", instructions="Answer with the lookup tool.", model="gpt-4.1-mini", tools=[lookup])
    triage = Agent(name="triage", instructions="Hand every question to the solver.", model="gpt-4.1-mini",
                   handoffs=[solver])
    print((await Runner.run(triage, question)).final_output)
    streamed = Runner.run_streamed(triage, f"stream {question}")
    async for _event in streamed.stream_events():
        pass
    print(streamed.final_output)


if __name__ == "__main__":
    asyncio.run(main())
