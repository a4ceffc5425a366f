"""The gateway's HTTP side (aiohttp, like ``spanrl serve``): proxy an agent's LLM calls to an
upstream, record one span per call with the upstream's engine token ids, and attribute it to a rollout.

Recorded routes (streaming too), each one span in the chat-completions span's GenAI form
(gateway/calls.py): ``POST [/r/<rollout_id>/<traceparent>]/v1/chat/completions``,
``/v1/completions``, ``/v1/responses`` (OpenAI Responses API, gateway/responses.py) and
``/v1/messages`` (Anthropic Messages, gateway/messages.py). Every other ``/v1/...`` route goes to the
upstream unchanged and is counted (gateway/passthrough.py). ``GET /spanrl/gateway`` says what this is
(the runner probes it), ``GET /health`` the same. The ``/r/...`` prefix is the base URL
``spanrl rollout`` hands each attempt: the span gets that ``spanrl.rollout_id`` and is a child of the
runner's attempt span (``traceparent``, ``-`` for none). A caller's own ``traceparent`` header wins
as the parent (an instrumented agent: its client span and ours become one call, docs/lake.md). A
call with neither is a root span, its own one-call rollout, counted in ``unattributed``.

Every call is recorded or counted as not (gateway/delivery.py: spans cut to ``max_span_bytes``, the
exporter's refusals counted); gateway/guard.py refuses a foreign Host (421) or a web page (403).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from spanrl.gateway.asking import LOGPROB_FIELDS, Asking
from spanrl.gateway.calls import PROMPT_UNKNOWN, Call
from spanrl.gateway.chat import ChatCall, CompletionsCall
from spanrl.gateway.config import GatewayConfig
from spanrl.gateway.conversations import Conversations
from spanrl.gateway.delivery import MIB, ORIGINAL_BYTES, TRUNCATED, Tally, fit, tracer_provider
from spanrl.gateway.guard import gateway_guard
from spanrl.gateway.headers import AGENT_HEADER, recorded_headers
from spanrl.gateway.messages import MessagesCall
from spanrl.gateway.passthrough import pass_through, route_name
from spanrl.gateway.prompting import PINNED, apply_prompt, route_prefixes
from spanrl.gateway.responses import ResponsesCall
from spanrl.gateway.upstream import completion, fail
from spanrl.layout import otel_dir
from spanrl.serve.api import ApiError, auth_middleware, error_response, json_body
from spanrl.webguard import allowed_hosts, is_loopback

log = logging.getLogger("spanrl.gateway")
SERVICE_NAME = "spanrl-gateway"
SCOPE = "spanrl.gateway"
PREFIX = "/r/{rollout_id}/{traceparent}"
UPSTREAM_TIMEOUT_S = 600.0
COUNTERS = ("calls", "engine_ids", "failed", "unattributed", "truncated", "not_recorded", "prompt_unknown",
            "passed_through", "refused", "spans")


@dataclass
class Gateway:
    config: GatewayConfig
    otlp_url: str | None = None
    counts: Counter = field(default_factory=Counter)
    span_exporter: Any = None

    def __post_init__(self) -> None:
        self.asking = Asking(self.config.upstream, self.config.token_ids, self.config.upstream_logprobs)
        self.counts.update(dict.fromkeys(COUNTERS, 0))  # every counter shown, zeros too
        self.routes: Counter = Counter()  # passed-through calls per route
        self.conversations = Conversations()
        self.tally = Tally()
        self.provider: Any = None
        self.tracer: Any = None
        self.session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_request_bytes,
                              middlewares=[gateway_guard(allowed_hosts(self.config.host, self.config.allow_hosts),
                                                         self.config.host, self.counts),
                                           auth_middleware(self.config.token, frozenset({"/health", "/spanrl/gateway"}))])
        calls: tuple[Callable[[dict[str, Any], bool], Call], ...] = (
            ChatCall, CompletionsCall, MessagesCall, lambda body, capture: ResponsesCall(body, capture, self.conversations))
        for prefix in route_prefixes(self.config.prompts, PREFIX):
            for make in calls:
                app.router.add_post(prefix + "/v1" + make({}, False).route, functools.partial(self._recorded, make=make))
            app.router.add_route("*", prefix + "/v1/{tail:.*}", self.passthrough)
        for root in ("", PINNED):  # /p/<agent>/<version>: a pinned prompt's URL is probed like the gateway's
            app.router.add_get(root + "/spanrl/gateway", self.info)
            app.router.add_get(root + "/health", self.info)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self.provider = tracer_provider(self.otlp_url, self.span_exporter, SERVICE_NAME,
                                        self.config.max_span_bytes, self.tally)
        self.tracer = self.provider.get_tracer(SCOPE)
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=UPSTREAM_TIMEOUT_S))

    async def _on_cleanup(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()
        if self.provider is not None:  # off the loop: the embedded collector may be on this loop
            await asyncio.get_running_loop().run_in_executor(None, self.provider.shutdown)
            lost = self.span_counts()["spans_pending"]
            if lost:  # ended but never exported: the queue was full, or the final flush timed out
                self.tally.add(False, lost)
                log.warning("spanrl gateway: %d span(s) never exported (export queue full or flush timed out); "
                            "counted in spans_dropped", lost)
        log.info("spanrl gateway: %s", self.summary())

    def span_counts(self) -> dict[str, int]:
        """Spans ended, written (the exporter confirmed them), dropped (it refused them) and pending
        (waiting in the export queue): every ended span is one of the last three."""
        written, dropped = self.tally.written, self.tally.dropped
        return {"spans": self.counts["spans"], "spans_written": written, "spans_dropped": dropped,
                "spans_pending": self.counts["spans"] - written - dropped}

    def summary(self) -> str:
        c, s = self.counts, self.span_counts()
        routes = ", ".join(f"{n} {r}" for r, n in sorted(self.routes.items())) or "none"
        return (f"{c['calls']} calls, {c['engine_ids']} with engine token ids, {c['failed']} failed, "
                f"{c['unattributed']} with neither rollout id nor traceparent (each its own one-call rollout); "
                f"spans: {s['spans_written']} written, {s['spans_dropped']} dropped, {s['spans_pending']} pending, "
                f"{c['truncated']} with content cut to --max-span-mib; {c['not_recorded']} calls not recorded "
                f"(request body not JSON or over the size limit); {c['prompt_unknown']} recorded without their "
                f"prompt (previous_response_id unknown to this gateway); {c['passed_through']} calls passed "
                f"through unrecorded ({routes}); {c['refused']} requests refused by the Host/origin guard")

    async def info(self, _request: web.Request) -> web.Response:
        return web.json_response({"gateway": "spanrl", "upstream": self.config.upstream, "otlp": self.otlp_url,
                                  "data": str(Path(self.config.data).resolve()),
                                  "asks_token_ids": self.asking.asks_ids(),
                                  "token_id_fields_rejected": sorted(self.asking.rejected - set(LOGPROB_FIELDS)),
                                  "upstream_logprobs": self.config.upstream_logprobs,
                                  "asks_logprobs": self.asking.asks_logprobs(),
                                  "max_span_bytes": self.config.max_span_bytes,
                                  "counts": {**self.counts, **self.span_counts()},
                                  "passed_through_routes": dict(self.routes)})

    async def passthrough(self, request: web.Request) -> web.StreamResponse:
        """Any route not recorded: forwarded unchanged, counted (never a 404 of the gateway's own)."""
        assert self.session is not None
        tail = request.match_info["tail"]
        self.counts["passed_through"] += 1
        self.routes[route_name(request.method, tail)] += 1
        try:
            return await pass_through(self.session, request, f"{self.config.upstream}/{tail}", self.config.token,
                                      self.config.upstream_key)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return error_response(ApiError(f"upstream {self.config.upstream} failed on {request.method} /v1/{tail}: "
                                           f"{exc!r}", 502))

    def _start_span(self, request: web.Request, call: Call) -> tuple[Any, dict[str, Any]]:
        """The call's span and its request attributes; these are set when the span ends
        (``_end_span``), once the whole call is known and fitted to ``max_span_bytes``."""
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind

        rollout_id = request.match_info.get("rollout_id")
        url_parent = request.match_info.get("traceparent", "-")
        carrier = {k.lower(): v for k, v in request.headers.items()}
        if "traceparent" not in carrier and url_parent != "-":
            carrier = {"traceparent": url_parent}
        if rollout_id is None and "traceparent" not in carrier:
            self.counts["unattributed"] += 1
        applied = apply_prompt(self.config.prompts, Path(self.config.data), request, call)  # before the span reads it
        span = self.tracer.start_span(f"{call.operation} {call.model}", context=extract(carrier), kind=SpanKind.SERVER)
        attrs = {**call.request_attributes(), **applied}
        if PROMPT_UNKNOWN in attrs:
            self.counts["prompt_unknown"] += 1
            log.warning("spanrl gateway: a %s call recorded without its prompt: %s", call.route, attrs[PROMPT_UNKNOWN])
        attrs["gen_ai.system"] = attrs["gen_ai.provider.name"] = SCOPE
        attrs["spanrl.gateway.upstream"] = self.config.upstream
        attrs["spanrl.gateway.api"] = call.route.lstrip("/")
        if rollout_id is not None:
            attrs["spanrl.rollout_id"] = rollout_id  # aiohttp decoded the path segment already (%2F -> /)
        if agent := request.headers.get(AGENT_HEADER, "").strip():  # the agent names itself: llm_calls.agent_name
            attrs["gen_ai.agent.name"] = agent  # (an instrumented agent's own agent spans still win: docs/gateway.md)
        return span, attrs

    def _end_span(self, span: Any, attrs: dict[str, Any]) -> None:
        """Set the call's attributes, cut to ``max_span_bytes`` (counted in ``truncated``), and end it."""
        fitted = fit(attrs, self.config.max_span_bytes)
        span.set_attributes(fitted.attributes)
        if fitted.truncated:
            self.counts["truncated"] += 1
            span.set_attributes({TRUNCATED: fitted.truncated, ORIGINAL_BYTES: fitted.original_bytes})
            log.warning("spanrl gateway: call %s recorded %d bytes, over --max-span-mib %g: cut %s",
                        fitted.attributes.get("gen_ai.response.id", "(no response id)"), fitted.original_bytes,
                        self.config.max_span_bytes / MIB, ", ".join(fitted.truncated))
        if "spanrl.response_token_ids" in fitted.attributes:
            self.counts["engine_ids"] += 1
        else:  # no ids from the upstream (or dropped to fit): the text is re-tokenised at training
            span.set_attribute("spanrl.token_source", "text")
        span.end()
        self.counts["spans"] += 1

    async def _recorded(self, request: web.Request, make: Callable[[dict[str, Any], bool], Call]) -> web.StreamResponse:
        assert self.session is not None
        self.counts["calls"] += 1
        span, attrs = None, {}
        try:
            call = make(await self._body(request), self.config.capture_messages)
            span, attrs = self._start_span(request, call)
            resp = await self._post(request, call, span)
            try:
                if resp.status != 200:
                    text = await resp.read()
                    self.counts["failed"] += 1
                    fail(span, f"upstream HTTP {resp.status}: {text[:300].decode(errors='replace')}")
                    return web.Response(body=text, status=resp.status,
                                        content_type=resp.content_type or "application/json")
                if "text/event-stream" in resp.headers.get("Content-Type", ""):
                    return await self._stream(request, resp, attrs, call)
                data = completion(await resp.read(), resp.content_type, self.config.upstream)
            finally:
                resp.release()
            attrs.update(call.response_attributes(data))
            return web.json_response(call.for_agent(data))
        except ApiError as exc:
            self.counts["failed"] += 1
            if span is None:
                self.counts["not_recorded"] += 1
            fail(span, str(exc))
            return error_response(exc)
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.counts["failed"] += 1
            fail(span, f"upstream: {exc}")
            return error_response(ApiError(f"upstream {self.config.upstream} failed: {exc!r}", 502))
        finally:
            if span is not None:
                self._end_span(span, attrs)

    async def _body(self, request: web.Request) -> dict[str, Any]:
        """The agent's request as a JSON object; ApiError (400, 413) otherwise."""
        try:
            return await json_body(request)
        except web.HTTPRequestEntityTooLarge:
            raise ApiError(f"the request body is over {self.config.max_request_bytes} bytes, the most spanrl "
                           "gateway accepts; send a shorter conversation", 413) from None

    async def _post(self, request: web.Request, call: Call, span: Any) -> aiohttp.ClientResponse:
        """The upstream's response, asked for token ids and log-probs as gateway/asking.py says. Our
        span is the upstream's ``traceparent``: a tracing upstream (``spanrl serve``) records its span
        as a child."""
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        assert self.session is not None
        headers = recorded_headers(request.headers, self.config.token, self.config.upstream_key,
                                   anthropic=isinstance(call, MessagesCall))
        inject(headers, context=set_span_in_context(span))
        return await self.asking.post(self.session, self.config.upstream + call.route, call, headers)

    async def _stream(self, request: web.Request, resp: aiohttp.ClientResponse, attrs: dict[str, Any],
                      call: Call) -> web.StreamResponse:
        """Server-sent events passed on line by line (``event:`` lines and all); each ``data:`` JSON
        object is fed to the call's stream assembler and, when the gateway asked for ids the agent
        did not (ids, log-probs), sent on without them."""
        out = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await out.prepare(request)
        acc, rewrite = call.accumulator(), call.rewrites()
        client_gone = False
        async for line in resp.content:
            if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
                try:
                    event = json.loads(line[5:])
                except json.JSONDecodeError:
                    event = None
                if isinstance(event, dict):
                    acc.add(event)
                    if rewrite:
                        line = b"data: " + json.dumps(call.for_agent(event), ensure_ascii=False).encode() + b"\n"
            if not client_gone:
                try:
                    await out.write(line)
                except ConnectionResetError:  # the client stopped reading (an SDK closes after [DONE]):
                    client_gone = True        # the upstream's answer is still read and recorded whole
        attrs.update(call.response_attributes(acc.response()))
        if not client_gone:
            with contextlib.suppress(ConnectionResetError):
                await out.write_eof()
        return out


# --------------------------------------------------------------------------- running it
@dataclass
class RunningGateway:
    """A gateway started by ``gateway_in_background``: its URL (``…/v1`` is the policy URL) and ``stop()``."""

    url: str
    gateway: Gateway
    _loop: asyncio.AbstractEventLoop
    _runner: web.AppRunner
    _thread: threading.Thread
    _collector: Any = None

    def stop(self) -> None:
        """Stops serving, flushes the spans, then stops the embedded collector (every span on disk)."""
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=60)
        if self._collector is not None:
            asyncio.run_coroutine_threadsafe(self._collector.stop(), self._loop).result(timeout=120)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


async def _start(config: GatewayConfig, span_exporter: Any) -> tuple[Gateway, web.AppRunner, Any, str]:
    collector, otlp = None, config.otlp
    if otlp is None and span_exporter is None:
        from spanrl.collector import CollectorConfig, EmbeddedCollector

        collector = EmbeddedCollector(CollectorConfig(data_root=Path(config.data), http_port=0, grpc_port=0))
        ep = await collector.start()
        otlp = f"http://127.0.0.1:{ep.http_port}"
    gateway = Gateway(config, otlp, span_exporter=span_exporter)
    runner = web.AppRunner(gateway.app(), handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, config.host, config.port).start()
    return gateway, runner, collector, f"http://{config.host}:{runner.addresses[0][1]}"


def gateway_in_background(config: GatewayConfig, span_exporter: Any = None) -> RunningGateway:
    """Start the gateway (and its embedded collector unless ``otlp``) on its own event-loop thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="spanrl-gateway-http", daemon=True)
    thread.start()
    gateway, runner, collector, url = asyncio.run_coroutine_threadsafe(_start(config, span_exporter), loop).result(60)
    return RunningGateway(url, gateway, loop, runner, thread, collector)


def run_gateway(config: GatewayConfig) -> None:
    """Serve until SIGINT/SIGTERM; prints the URL once listening; flushes spans on the way out."""

    if config.token is None and not is_loopback(config.host):
        sys.stderr.write(f"warning: spanrl gateway on {config.host} without --token: anyone who reaches this port "
                         "can call the upstream (with --upstream-key, on your key) and write training data\n")

    async def main() -> None:
        gateway, runner, collector, url = await _start(config, None)
        print(f"spanrl gateway: {url}/v1 -> {config.upstream} (spans: {gateway.otlp_url}"
              f"{' = embedded collector, ' + str(otel_dir(config.data)) if collector else ''})", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
            if collector is not None:
                await collector.stop()  # the counters were logged by the app's cleanup

    from spanrl.processes import run_until_signalled

    run_until_signalled(main)
