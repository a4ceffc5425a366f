"""The headers the gateway sends its upstream, for recorded and passed-through calls alike.

The agent's own credentials go to the upstream unless the gateway has a ``--token`` (then they are
the gateway's, and the upstream gets ``--upstream-key``): ``Authorization`` for the OpenAI APIs,
``x-api-key`` for Anthropic's (the Anthropic SDK's header). The API-version and routing headers an
SDK sends (``anthropic-version``, ``anthropic-beta``, ``OpenAI-Organization``, ...) go as they came:
without ``anthropic-version`` Anthropic's API refuses the call.
"""

from __future__ import annotations

from collections.abc import Mapping

from multidict import CIMultiDict

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade", "host", "content-length", "content-encoding"})
CREDENTIALS = frozenset({"authorization", "x-api-key"})
AGENT_HEADER = "x-spanrl-agent"  # = spanrl.serve.server.AGENT_HEADER (not imported: that loads the engine)
KEPT = ("anthropic-version", "anthropic-beta", "openai-organization", "openai-project", "openai-beta", AGENT_HEADER)


def credentials(incoming: Mapping[str, str], token: str | None, upstream_key: str | None,
                anthropic: bool) -> dict[str, str]:
    """The upstream's credential headers: ``upstream_key`` when set (for the Anthropic API both as
    ``x-api-key``, Anthropic's header, and as a bearer token, what vLLM's ``--api-key`` checks; the
    Anthropic SDK itself sends both when given both), else the agent's own headers when the gateway
    takes no token of its own."""
    if upstream_key:
        bearer = {"Authorization": f"Bearer {upstream_key}"}
        return {"x-api-key": upstream_key, **bearer} if anthropic else bearer
    if token is not None:
        return {}
    return {k: v for k, v in incoming.items() if k.lower() in CREDENTIALS}


def recorded_headers(incoming: Mapping[str, str], token: str | None, upstream_key: str | None,
                     anthropic: bool) -> dict[str, str]:
    """A recorded call's upstream headers: JSON, the kept SDK headers, the credentials."""
    headers = {"Content-Type": "application/json"}
    headers.update({k: v for k, v in incoming.items() if k.lower() in KEPT})
    headers.update(credentials(incoming, token, upstream_key, anthropic))
    return headers


def passed_headers(incoming: Mapping[str, str], token: str | None, upstream_key: str | None) -> CIMultiDict[str]:
    """A passed-through call's upstream headers: all the agent's but the hop-by-hop ones, the
    credentials replaced as for a recorded call."""
    out: CIMultiDict[str] = CIMultiDict((k, v) for k, v in incoming.items()
                                        if k.lower() not in HOP_BY_HOP and k.lower() not in CREDENTIALS)
    out.update(credentials(incoming, token, upstream_key, "x-api-key" in {k.lower() for k in incoming}))
    return out


def answer_headers(upstream: Mapping[str, str]) -> CIMultiDict[str]:
    """The upstream's answer headers the agent gets: all but the hop-by-hop ones (the body arrives
    decompressed, its length set again by the gateway)."""
    return CIMultiDict((k, v) for k, v in upstream.items() if k.lower() not in HOP_BY_HOP)
