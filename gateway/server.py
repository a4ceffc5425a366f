"""The gateway's HTTP side (aiohttp, like ``spanrl serve``): proxy chat completions to an upstream,
record one span per call with the upstream's engine token ids, and attribute it to a rollout.

Routes: ``POST [/r/<rollout_id>/<traceparent>]/v1/chat/completions`` (streaming too),
``GET [/r/...]/v1/models`` (the upstream's), ``GET /spanrl/gateway`` (what this is: the runner
probes it), ``GET /health`` (counters). The ``/r/...`` prefix is the base URL ``spanrl rollout``
hands each attempt: the span gets that ``spanrl.rollout_id`` and is a child of the runner's
attempt span (``traceparent``, ``-`` for none). A caller's own ``traceparent`` header wins as the
parent (an instrumented agent: its client span and ours become one call, docs/lake.md). A call with
neither is a root span, its own one-call rollout, counted in ``unattributed``.

Every call is recorded or counted as not: a span's content is cut to ``max_span_bytes`` and the
exporter's refusals are counted (gateway/delivery.py); a request naming a foreign Host (421) or
coming from a web page (403) is refused before anything is forwarded (gateway/guard.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from spanrl.errors import InputError
from spanrl.gateway.delivery import MIB, ORIGINAL_BYTES, TRUNCATED, Tally, fit, tracer_provider
from spanrl.gateway.guard import gateway_guard
from spanrl.gateway.tracing import Accumulator, response_attributes, strip_extras
from spanrl.gateway.upstream import Replay, completion, fail
from spanrl.layout import otel_dir
from spanrl.serve.api import ApiError, auth_middleware, error_response, json_body
from spanrl.serve.tracing import request_attributes
from spanrl.webguard import allowed_hosts, is_loopback

log = logging.getLogger("spanrl.gateway")
SERVICE_NAME = "spanrl-gateway"
SCOPE = "spanrl.gateway"
PREFIX = "/r/{rollout_id}/{traceparent}"
UPSTREAM_TIMEOUT_S = 600.0
AGENT_HEADER = "x-spanrl-agent"  # = spanrl.serve.server.AGENT_HEADER (not imported: that loads the engine)
MAX_SPAN_MIB_RANGE = (1 / 16, 48.0)  # the OTLP exporter refuses requests over 64 MiB itself
COUNTERS = ("calls", "engine_ids", "failed", "unattributed", "truncated", "not_recorded", "refused", "spans")


@dataclass
class GatewayConfig:
    """What ``spanrl gateway`` users set."""

    upstream: str
    data: Path = Path("./spanrl-data")
    host: str = "127.0.0.1"
    port: int = 8400
    otlp: str | None = None  # None: the embedded collector writing DATA/otel
    token: str | None = None  # what agents must send; the upstream then gets upstream_key
    upstream_key: str | None = None
    capture_messages: bool = True
    token_ids: str = "auto"  # auto: ask, stop asking when the upstream rejects the field; on; off
    allow_hosts: tuple[str, ...] = ()  # Host names answered besides the loopback names and ``host``
    max_span_bytes: int = 8 * MIB  # one call's recorded content, and one export request, at most
    max_request_bytes: int = 64 * MIB  # an agent's request body, at most (413 above)

    def __post_init__(self) -> None:
        if not self.upstream.startswith(("http://", "https://")):
            raise InputError(f"--upstream {self.upstream!r}: give the upstream's base URL, e.g. http://127.0.0.1:8000/v1")
        self.upstream = self.upstream.rstrip("/")
        if self.token_ids not in ("auto", "on", "off"):
            raise InputError(f"--token-ids must be auto, on or off, got {self.token_ids!r}")
        lo, hi = MAX_SPAN_MIB_RANGE
        if not lo * MIB <= self.max_span_bytes <= hi * MIB:
            raise InputError(f"--max-span-mib must be between {lo} and {hi:g} (the OTLP exporter refuses requests "
                             f"over 64 MiB), got {self.max_span_bytes / MIB:g}")
        if self.max_request_bytes <= 0:
            raise InputError(f"max_request_bytes must be positive, got {self.max_request_bytes}")
        self.allow_hosts = tuple(self.allow_hosts)


@dataclass
class Gateway:
    config: GatewayConfig
    otlp_url: str | None = None
    counts: Counter = field(default_factory=Counter)
    span_exporter: Any = None

    def __post_init__(self) -> None:
        self.ask_ids = self.config.token_ids != "off"
        self.counts.update(dict.fromkeys(COUNTERS, 0))  # every counter shown, zeros too
        self.tally = Tally()
        self.provider: Any = None
        self.tracer: Any = None
        self.session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_request_bytes,
                              middlewares=[gateway_guard(allowed_hosts(self.config.host, self.config.allow_hosts),
                                                         self.config.host, self.counts),
                                           auth_middleware(self.config.token, frozenset({"/health", "/spanrl/gateway"}))])
        for prefix in ("", PREFIX):
            app.router.add_post(prefix + "/v1/chat/completions", self.chat)
            app.router.add_get(prefix + "/v1/models", self.models)
        app.router.add_get("/spanrl/gateway", self.info)
        app.router.add_get("/health", self.info)
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
        return (f"{c['calls']} calls, {c['engine_ids']} with engine token ids, {c['failed']} failed, "
                f"{c['unattributed']} with neither rollout id nor traceparent (each its own one-call rollout); "
                f"spans: {s['spans_written']} written, {s['spans_dropped']} dropped, {s['spans_pending']} pending, "
                f"{c['truncated']} with content cut to --max-span-mib; {c['not_recorded']} calls not recorded "
                f"(request body not JSON or over the size limit); {c['refused']} requests refused by the "
                f"Host/origin guard")

    async def info(self, _request: web.Request) -> web.Response:
        return web.json_response({"gateway": "spanrl", "upstream": self.config.upstream, "otlp": self.otlp_url,
                                  "data": str(Path(self.config.data).resolve()), "asks_token_ids": self.ask_ids,
                                  "max_span_bytes": self.config.max_span_bytes,
                                  "counts": {**self.counts, **self.span_counts()}})

    def _upstream_headers(self, request: web.Request) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if request.headers.get(AGENT_HEADER):  # spanrl serve routes it to that agent's adapter chain
            headers[AGENT_HEADER] = request.headers[AGENT_HEADER]
        if self.config.upstream_key:
            headers["Authorization"] = f"Bearer {self.config.upstream_key}"
        elif self.config.token is None and request.headers.get("Authorization"):
            headers["Authorization"] = request.headers["Authorization"]  # the agent's key is the upstream's
        return headers

    async def models(self, request: web.Request) -> web.Response:
        assert self.session is not None
        try:
            async with self.session.get(self.config.upstream + "/models", headers=self._upstream_headers(request)) as resp:
                return web.Response(body=await resp.read(), status=resp.status, content_type="application/json")
        except aiohttp.ClientError as exc:
            return error_response(ApiError(f"upstream {self.config.upstream} unreachable: {exc}", 502))

    def _start_span(self, request: web.Request, body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
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
        model = str(body.get("model") or "unknown")
        span = self.tracer.start_span(f"chat {model}", context=extract(carrier), kind=SpanKind.SERVER)
        attrs = request_attributes(model, body, self.config.capture_messages)
        attrs["gen_ai.system"] = attrs["gen_ai.provider.name"] = SCOPE
        attrs["spanrl.gateway.upstream"] = self.config.upstream
        if rollout_id is not None:
            attrs["spanrl.rollout_id"] = rollout_id  # aiohttp decoded the path segment already (%2F -> /)
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
        span.end()
        self.counts["spans"] += 1

    async def chat(self, request: web.Request) -> web.StreamResponse:
        assert self.session is not None
        self.counts["calls"] += 1
        span, attrs = None, {}
        try:
            body = await self._body(request)
            asked = bool(body.get("return_token_ids"))
            span, attrs = self._start_span(request, body)
            resp = await self._post(request, body, asked, span)
            try:
                if resp.status != 200:
                    text = await resp.read()
                    self.counts["failed"] += 1
                    fail(span, f"upstream HTTP {resp.status}: {text[:300].decode(errors='replace')}")
                    return web.Response(body=text, status=resp.status,
                                        content_type=resp.content_type or "application/json")
                if "text/event-stream" in resp.headers.get("Content-Type", ""):
                    return await self._stream(request, resp, attrs, asked)
                data = completion(await resp.read(), resp.content_type, self.config.upstream)
            finally:
                resp.release()
            self._record(attrs, data)
            return web.json_response(data if asked else strip_extras(data))
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

    async def _post(self, request: web.Request, body: dict[str, Any], asked: bool, span: Any) -> aiohttp.ClientResponse:
        """The upstream's response; asks for token ids unless told not to, and in ``auto`` stops
        asking once an upstream rejects the field (a hosted API's 400 naming it). Our span is the
        upstream's ``traceparent``: a tracing upstream (``spanrl serve``) records its span as a child."""
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        assert self.session is not None
        url, headers = self.config.upstream + "/chat/completions", self._upstream_headers(request)
        inject(headers, context=set_span_in_context(span))
        if self.ask_ids and not asked:
            resp = await self.session.post(url, json={**body, "return_token_ids": True}, headers=headers)
            if not (resp.status == 400 and self.config.token_ids == "auto"):
                return resp
            text = await resp.read()
            if b"return_token_ids" not in text:
                return Replay(resp, text)  # type: ignore[return-value]
            resp.release()
            self.ask_ids = False
            log.warning("upstream %s rejects return_token_ids: recording text only (re-tokenised at training)",
                        self.config.upstream)
        return await self.session.post(url, json=body, headers=headers)

    async def _stream(self, request: web.Request, resp: aiohttp.ClientResponse, attrs: dict[str, Any],
                      asked: bool) -> web.StreamResponse:
        out = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await out.prepare(request)
        acc = Accumulator()
        client_gone = False
        async for line in resp.content:
            if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
                try:
                    chunk = json.loads(line[5:])
                except json.JSONDecodeError:
                    chunk = None
                if isinstance(chunk, dict):
                    acc.add(chunk)
                    if not asked:
                        line = b"data: " + json.dumps(strip_extras(chunk), ensure_ascii=False).encode() + b"\n"
            if not client_gone:
                try:
                    await out.write(line)
                except ConnectionResetError:  # the client stopped reading (an SDK closes after [DONE]):
                    client_gone = True        # the upstream's answer is still read and recorded whole
        self._record(attrs, acc.response())
        if not client_gone:
            with contextlib.suppress(ConnectionResetError):
                await out.write_eof()
        return out

    def _record(self, attrs: dict[str, Any], data: dict[str, Any]) -> None:
        attrs.update(response_attributes(data, self.config.capture_messages))


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
