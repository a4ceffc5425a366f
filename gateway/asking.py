"""What the gateway asks the upstream for on the agent's behalf, and what it does when refused.

Two things make a call trainable beyond its text: the engine's token ids (``--token-ids``: vLLM's
``return_token_ids``, the Responses API's ``enable_response_messages``) and the sampling log-probs
of the answer's tokens, the behaviour policy an off-policy RL loss needs (``--upstream-logprobs``:
chat completions ``logprobs: true``, text completions ``logprobs: 1``). The gateway adds the fields
the agent did not send itself, records what comes back in the call's span, and takes it out of the
answer again (gateway/calls.py ``Call.for_agent``), so the agent sees exactly what it would have
seen without the gateway.

Modes. Token ids: ``auto`` asks until the upstream answers a 400 naming the field, then never again
(a hosted API); ``on`` always; ``off`` never. Log-probs: ``auto`` asks while the token ids are
asked or sent (log-probs are recorded only beside engine ids: without them the answer is
re-tokenised and the values cannot be aligned), e.g. a ``spanrl serve`` or vLLM upstream, and stops
for good at the first 400 over it; ``always`` asks every call (still retried without it when
refused); ``never`` only passes on what the agent asked for itself.

A 400 caused by an added log-probs field never fails the agent's call: the request is sent once
more without it. A 400 that names none of the added fields is retried without the log-probs field
too (an upstream may refuse it without naming it); when the retry then succeeds, ``auto`` stops
asking, and when it fails the same way the agent gets that answer (its own request was at fault).
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

from spanrl.gateway.calls import Call
from spanrl.gateway.upstream import Replay

log = logging.getLogger("spanrl.gateway")
TOKEN_ID_MODES = ("auto", "on", "off")
LOGPROB_MODES = ("auto", "always", "never")
LOGPROB_FIELDS = ("logprobs",)


class Asking:
    """The fields added per call and the ones the upstream refused (``rejected``: never asked again)."""

    def __init__(self, upstream: str, token_ids: str = "auto", logprobs: str = "auto") -> None:
        self.upstream, self.token_ids, self.logprobs = upstream, token_ids, logprobs
        self.rejected: set[str] = set()

    def asks_ids(self) -> bool:
        return self.token_ids != "off" and "return_token_ids" not in self.rejected

    def asks_logprobs(self) -> bool:
        return self.logprobs == "always" or (self.logprobs == "auto" and self.asks_ids()
                                             and "logprobs" not in self.rejected)

    def extras(self, call: Call) -> dict[str, Any]:
        """The fields this call gets on top of the agent's request."""
        out: dict[str, Any] = {}
        if call.id_field and self.token_ids != "off" and call.id_field not in self.rejected and not call.asked():
            out[call.id_field] = True
        ids_coming = call.asked() or bool(out)
        if call.logprob_field and not call.asked_logprobs() and (
                self.logprobs == "always" or (self.logprobs == "auto" and ids_coming
                                              and not set(call.logprob_field) & self.rejected)):
            out.update(call.logprob_field)
        return out

    def _droppable(self, name: str) -> bool:
        return name in LOGPROB_FIELDS or self.token_ids == "auto"

    def _remember(self, names: set[str], route: str) -> None:
        for name in sorted(names):
            if name in LOGPROB_FIELDS and self.logprobs != "auto":
                continue
            if name not in LOGPROB_FIELDS and self.token_ids != "auto":
                continue
            self.rejected.add(name)
            what = ("log-probs: no behaviour policy recorded" if name in LOGPROB_FIELDS
                    else "token ids: recording calls as text only (re-tokenised at training)")
            log.warning("upstream %s rejects %s: not asking for %s again (%s calls and all others)",
                        self.upstream, name, what, route)

    async def post(self, session: aiohttp.ClientSession, url: str, call: Call,
                   headers: dict[str, str]) -> aiohttp.ClientResponse:
        """The upstream's response to the agent's request plus ``extras``; sets ``call.added`` to the
        fields the answer was asked with (so ``call.for_agent`` takes out what they brought)."""
        extras = self.extras(call)
        call.added = set(extras)
        if not extras:
            return await session.post(url, json=call.body, headers=headers)
        resp = await session.post(url, json={**call.body, **extras}, headers=headers)
        if resp.status != 400:
            return resp
        text = await resp.read()
        named = {name for name in extras if name.encode() in text}
        drop = {name for name in named if self._droppable(name)} if named else set(extras) & set(LOGPROB_FIELDS)
        if not drop:
            return Replay(resp, text)  # type: ignore[return-value]
        resp.release()
        keep = {k: v for k, v in extras.items() if k not in drop}
        call.added = set(keep)
        retry = await session.post(url, json={**call.body, **keep}, headers=headers)
        if named or retry.status < 400:  # the refusal was the added field's
            self._remember(drop, call.route)
        return retry
