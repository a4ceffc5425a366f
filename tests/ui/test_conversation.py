"""One rollout as a conversation (issue 31): each step shows only the messages new since that agent's
previous call (prompt + response), the full prompt stays one click away, and the prefix logic holds
for replayed responses whose representation differs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from spanrl.ui import Lake, make_app
from spanrl.ui.pages import new_messages

SYS = {"role": "system", "content": "be brief"}
USER = {"role": "user", "content": "2+2?"}
ASK = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "calc"}}]}
TOOL = {"role": "tool", "tool_call_id": "c1", "content": "4"}


def test_new_messages_is_the_suffix_after_the_previous_prompt_and_response() -> None:
    assert new_messages([SYS, USER], []) == [SYS, USER]
    replayed = {**ASK, "content": "", "extra": 1}  # null vs empty content, extra keys: still the same message
    assert new_messages([SYS, USER, replayed, TOOL], [SYS, USER, ASK]) == [TOOL]
    # a rewritten history (different system prompt) shows everything from the first difference
    assert new_messages([{"role": "system", "content": "other"}, USER], [SYS, USER, ASK]) == [
        {"role": "system", "content": "other"}, USER]


def _steps(html: str) -> list[tuple[str, str]]:
    """(visible part, full-prompt <details> part) of each step of the thread."""
    thread = html[html.index('<ol class="thread"'):html.index("</ol>")]
    out = []
    for step in thread.split('<li class="step"')[1:]:
        visible, _, details = step.partition('<details class="call">')
        out.append((visible, details))
    return out


def test_rollout_thread_shows_each_steps_new_messages(ui_data: Path) -> None:
    async def main() -> str:
        async with TestClient(TestServer(make_app(ui_data, None, Lake(ui_data)))) as client:
            return await (await client.get("/rollouts/ui-tool-error")).text()

    steps = _steps(asyncio.run(main()))
    assert len(steps) >= 2
    (first, first_full), (second, second_full) = steps[:2]
    question = re.search(r'role-user">\s*<span class="role">user</span>\s*<pre>([^<]+)</pre>', first)[1]
    assert question in first_full and question in second_full  # full prompt one click away, every step
    assert f"<pre>{question}</pre>" not in second  # ...but not repeated in the thread
    assert "already shown at this agent's previous step" in second
    assert 'class="msg role-tool"' in second  # the tool result is the new message of step 2
    assert 'class="air-hit"' in first and "step reward" in first and 'class="adv"' in first
