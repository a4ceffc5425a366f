"""``spanrl gateway --prompts``: the agent's stored prompt (``spanrl prompts``, prompts/store.py) put
into each request in place of the system prompt the agent sent, so an unmodified agent runs with the
optimized prompt (docs/prompts.md).

Which agent a call belongs to: the ``x-spanrl-agent`` header, else the request's ``model``, else the
sha256 of the system prompt it sent (``spanrl prompts optimize`` records it as ``original_sha256``);
the first of these that has a prompt in the store wins. The prompt is the agent's LATEST, or the
version the URL pins (``/p/<agent>/<version>/v1``: how ``spanrl prompts optimize`` scores a staged
candidate without moving LATEST). What is replaced: the first ``system`` / ``developer`` message of a
chat completion, a Responses call's ``instructions``, a Messages call's ``system``; a call without one
is sent as it came. A version's worked examples as conversation turns go in with it (gateway/turns.py).
The span records ``spanrl.prompt.original_sha256`` (whenever a system prompt was sent) and, when one was
put in, ``spanrl.prompt.agent`` / ``.version`` / ``.source`` and ``.turns`` (the chat messages added).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web

from spanrl.errors import InputError
from spanrl.gateway.calls import Call
from spanrl.gateway.headers import AGENT_HEADER
from spanrl.gateway.turns import insert_turns
from spanrl.prompts.store import PromptVersion, agent_for_hash, latest_version, read_version, text_sha256
from spanrl.serve.api import ApiError

PINNED = "/p/{prompt_agent}/{prompt_version}"  # URL prefix: apply this stored version (agent, version)
VERSION, AGENT, ORIGINAL, SOURCE, TURNS = ("spanrl.prompt.version", "spanrl.prompt.agent",
                                           "spanrl.prompt.original_sha256", "spanrl.prompt.source", "spanrl.prompt.turns")
ROLES = ("system", "developer")


def route_prefixes(prompts: bool, prefix: str) -> tuple[str, ...]:
    """The gateway's recorded-route prefixes: ``""`` and the rollout ``prefix``, pinned ones too with ``--prompts``."""
    return ("", prefix, PINNED, PINNED + prefix) if prompts else ("", prefix)


def _text(content: Any) -> str | None:
    """A system prompt's text: a string, or its text parts joined (chat ``text``, Messages ``text`` blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") in
                 ("text", "input_text")]
        return "".join(parts) if parts else None
    return None


def _slot(body: dict[str, Any], route: str) -> tuple[dict[str, Any], str] | None:
    """(the object holding the system prompt, its key) for this API, or None when the call has none."""
    if route == "/chat/completions":
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") in ROLES:
                return message, "content"
        return None
    if route == "/responses":
        if isinstance(body.get("instructions"), str):
            return body, "instructions"
        return None
    if route == "/messages":
        return (body, "system") if body.get("system") else None
    return None  # text completions: a prompt, no system message


def _stored(data: Path, agent: str, version: str | None) -> PromptVersion | None:
    try:
        return read_version(data, agent, version) if version or latest_version(data, agent) else None
    except InputError:
        return None


def apply_prompt(prompts: bool, data: Path, request: web.Request, call: Call) -> dict[str, Any]:
    """Put the matching agent's prompt into ``call.body`` (before its span reads it); the span attributes."""
    if not prompts:
        return {}
    slot = _slot(call.body, call.route)
    original = _text(slot[0][slot[1]]) if slot else None
    if original is None:
        return {}
    sha = text_sha256(original)
    attrs: dict[str, Any] = {ORIGINAL: sha}
    named = [n for n in (request.headers.get(AGENT_HEADER), call.body.get("model")) if isinstance(n, str) and n]
    pinned_agent, pinned = request.match_info.get("prompt_agent"), request.match_info.get("prompt_version")
    chosen, source = None, "url"
    if pinned_agent is not None:
        chosen = _stored(data, pinned_agent, pinned)
        if chosen is None:
            raise ApiError(f"the URL pins prompt version {pinned} of agent {pinned_agent!r}, which {data}/prompts does "
                           "not hold (`spanrl prompts list`)", 400)
        if pinned_agent not in named and sha not in (chosen.meta.get("original_sha256"), chosen.meta.get("sha256")):
            chosen = None  # another agent's call through the same URL: its own LATEST below
    if chosen is None:
        source = "latest"
        for agent in [*named, agent_for_hash(data, sha)]:
            if agent and (chosen := _stored(data, agent, None)) is not None:
                break
    if chosen is None:
        return attrs
    holder, key = slot  # type: ignore[misc]
    holder[key] = chosen.text
    attrs.update({AGENT: chosen.agent, VERSION: chosen.version, SOURCE: source})
    if chosen.turns:
        attrs[TURNS] = insert_turns(call.body, call.route, holder, chosen.turns)
    return attrs
