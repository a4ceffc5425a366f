"""``spanrl serve``: a small OpenAI-compatible chat server that traces its own token ids (docs/demo.md).

Routes: ``POST /v1/chat/completions``, ``POST /v1/responses`` and ``/v1/messages`` (the Responses
and Anthropic Messages APIs, translated to the same pipeline: serve/wire_apis.py), ``GET /v1/models``,
``GET /health`` (counters, including generate calls and batch sizes), ``POST /v1/load_lora_adapter``
/ ``/v1/unload_lora_adapter`` (vLLM-compatible). The HTTP side (aiohttp) only validates, renders the prompt and waits; the
model lives on one worker thread (``serve_batching.Batcher``) that batches concurrent requests and
swaps adapters between batches. Every completion gets one OTel span (``serve_tracing``); the
OpenAI wire format (validation, errors, logprobs, streaming) lives in ``serve_api``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from spanrl.errors import InputError
from spanrl.layout import agent_adapters_dir
from spanrl.publish import read_pointer
from spanrl.serve.api import (
    ApiError,
    auth_middleware,
    check_adapter_path,
    choice_params,
    error_response,
    json_body,
    messages_and_tools,
    parse_sampling,
    stream_response,
)
from spanrl.serve.batching import DEFAULT, AdapterWatcher, Batcher, Control, Job
from spanrl.serve.completion import completion_response
from spanrl.serve.config import ServeConfig
from spanrl.serve.engine import Engine, SamplingParams, Sequence
from spanrl.serve.tools import render_prompt
from spanrl.serve.tracing import (
    make_tracer_provider,
    request_attributes,
    response_attributes,
    start_chat_span,
)
from spanrl.serve.wire_apis import MESSAGES, RESPONSES, WireApi, stream_events
from spanrl.trainer.adapter import ADAPTER_CONFIG, adapters_dir, is_peft_folder

log = logging.getLogger("spanrl.serve")
ATTEMPT_PREFIX = "/r/{rollout_id}/{traceparent}"  # as spanrl gateway's: a rollout's attempt, its parent span
ADAPTER_HEADER = "x-spanrl-adapter"
AGENT_HEADER = "x-spanrl-agent"  # names the agent whose adapter chain answers (--agent-adapter)


# --------------------------------------------------------------------------- the server
class ChatServer:
    """Holds the engine, the batcher, the tracer and the aiohttp routes."""

    def __init__(self, config: ServeConfig, span_exporter: Any = None) -> None:
        self.config = config
        self.model_path = _resolve_model(config)
        self.name = config.served_model_name or self.model_path.name
        self.aliases = [a for a in dict.fromkeys(config.served_model_aliases) if a != self.name]
        self.engine = Engine(self.model_path, config.device, config.threads)
        self.watcher = _make_watcher(self.engine, config)
        self.batcher = Batcher(self.engine, self.watcher, config.max_batch, config.batch_wait_ms / 1000.0,
                               continuous=config.continuous_batching)
        self.provider = make_tracer_provider(config.otlp_endpoint, span_exporter)
        self.tracer = self.provider.get_tracer("spanrl.serve")
        self.requests = 0
        self.failed = 0
        self.started = time.time()
        # model name -> agent, and which cycle of each agent's chain is loaded (as adapter "agent:<name>")
        self.agent_routes = {s.partition("=")[0]: s.rpartition("=")[2] for s in config.agent_adapters}
        self.agents, self.agent_cycles = set(self.agent_routes.values()), dict[str, str]()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[auth_middleware(self.config.token)])
        for prefix in ("", ATTEMPT_PREFIX):  # the per-attempt base URL of `spanrl rollout --model` too
            app.router.add_post(prefix + "/v1/chat/completions", self.chat)
            for api in (RESPONSES, MESSAGES):  # the same pipeline, translated (serve/wire_apis.py)
                app.router.add_post(prefix + api.route, functools.partial(self._complete, api=api))
            app.router.add_get(prefix + "/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.health)
        app.router.add_post("/v1/load_lora_adapter", self.load_lora)
        app.router.add_post("/v1/unload_lora_adapter", self.unload_lora)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self.batcher.start()

    async def _on_cleanup(self, _app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.batcher.stop)
        self.provider.shutdown()  # flushes the batch processor

    # ----------------------------------------------------------------- routes
    async def health(self, _request: web.Request) -> web.Response:
        return web.json_response({
            "status": "ok", "model": self.name, "model_path": str(self.model_path),
            "device": self.engine.device, "adapter": self.watcher.current or "base",
            "adapters_loaded": sorted(self.engine.loaded), "adapter_loads": self.watcher.loads,
            "adapter_load_errors": self.watcher.errors, "adapter_last_error": self.watcher.last_error,
            "requests": self.requests, "failed_requests": self.failed, **self.batcher.stats(),
        })

    async def models(self, _request: web.Request) -> web.Response:
        created = int(self.started)
        data = [{"id": name, "object": "model", "created": created, "owned_by": "spanrl", "root": str(self.model_path)}
                for name in (self.name, *self.aliases)]  # every name the base model answers to, as vLLM lists them
        data += [{"id": a, "object": "model", "created": created, "owned_by": "spanrl", "parent": self.name}
                 for a in sorted(self.engine.loaded)]
        return web.json_response({"object": "list", "data": data})

    async def load_lora(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            name, path = body.get("lora_name"), body.get("lora_path")
            if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
                raise ApiError("load_lora_adapter needs lora_name and lora_path (strings)")
            folder = check_adapter_path(path, adapters_dir(self.config.data), self.config.allow_any_adapter_path)
            if name in self.engine.loaded and not body.get("load_inplace", False):  # vLLM's rule
                raise ApiError(f"The lora adapter '{name}' has already been loaded; pass load_inplace: true to replace it.")
            await self._on_model_thread(lambda: self.engine.load_adapter(name, folder))
        except ApiError as exc:
            return error_response(exc)
        except Exception as exc:
            return error_response(ApiError(f"loading {name!r} from {path} failed: {exc}", 400, "lora_path"))
        return web.Response(text=f"Success: LoRA adapter '{name}' added successfully.")

    async def unload_lora(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            name = body.get("lora_name")
            if not isinstance(name, str) or name not in self.engine.loaded or name == self.watcher.current:
                raise ApiError(f"no unloadable adapter named {name!r}; loaded: {sorted(self.engine.loaded)}", 404)
            await self._on_model_thread(lambda: self.engine.unload_adapter(name))
        except ApiError as exc:
            return error_response(exc)
        return web.Response(text=f"Success: LoRA adapter '{name}' removed successfully.")

    async def _on_model_thread(self, action: Any) -> Any:
        return await asyncio.wrap_future(self.batcher.submit(Control(action)))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._complete(request, None)

    async def _complete(self, request: web.Request, api: WireApi | None) -> web.StreamResponse:
        """One completion: a chat-completions request, or another API's (``api``) translated to one."""
        self.requests += 1
        span = None
        try:
            original = await json_body(request)
            body = api.to_chat(original) if api else original
            if self.config.temperature is not None:  # forced: the span records what was really used
                body = {**body, "temperature": self.config.temperature}
            model = body.get("model") or self.name
            if not isinstance(model, str):
                raise ApiError(f"model must be a string, got {model!r}", param="model")
            agent = request.headers.get(AGENT_HEADER) or self.agent_routes.get(model)
            adapter = await self._agent_adapter(agent) if agent else self._adapter_for(model)
            messages, tools = messages_and_tools(body)  # shapes checked before anything reads them
            params, n = parse_sampling(body, self.config.max_tokens)
            span = start_chat_span(self.tracer, self.name, request.headers, request.match_info)
            span.set_attributes(request_attributes(self.name, body, self.config.capture_messages))
            prompt_ids = self._prompt(messages, tools, params)
            job = Job([Sequence(prompt_ids, choice_params(params, i)) for i in range(n)], adapter)
            await asyncio.wrap_future(self.batcher.submit(job))
            response = completion_response(self.engine.tokenizer, body, model, job, tools is not None,
                                           api.id_prefix if api else "chatcmpl-")
            span.set_attributes(response_attributes(response, prompt_ids, job.seqs, str(self.model_path.name),
                                                    job.adapter_used, self.config.capture_messages))
            headers = {ADAPTER_HEADER: job.adapter_used or "base"}
            if api is not None:
                answer = api.from_chat(response, original, self.engine.tokenizer.decode)
                if original.get("stream"):
                    return await stream_events(request, api.events(answer), headers)
                return web.json_response(answer, headers=headers)
            if body.get("stream"):
                return await stream_response(request, response, headers, bool((body.get("stream_options") or {}).get("include_usage")))
            return web.json_response(response, headers=headers)
        except ApiError as exc:
            self.failed += 1
            _fail(span, exc)
            return error_response(exc)
        except Exception as exc:  # never crash on a request
            self.failed += 1
            log.exception("%s failed", api.route if api else "chat completion")
            _fail(span, exc)
            return error_response(ApiError(f"internal error: {exc}", 500))
        finally:
            if span is not None:
                span.end()

    async def _agent_adapter(self, agent: str) -> str:
        """The adapter of ``agent``'s chain (loaded, or reloaded when its LATEST moved since)."""
        if agent not in self.agents:
            raise ApiError(f"no adapter chain for agent {agent!r}; this server routes {sorted(self.agents)} "
                           "(start it with --agent-adapter NAME)", 404, "model")
        root, name = agent_adapters_dir(self.config.data, agent), f"agent:{agent}"
        if (cycle := read_pointer(root)) is None:
            raise ApiError(f"agent {agent!r} has no adapter yet in {root}: run `spanrl train --agent {agent}`", 404)
        if self.agent_cycles.get(agent) != cycle:
            await self._on_model_thread(lambda: self.engine.load_adapter(name, root / cycle))
            self.agent_cycles[agent] = cycle
        return name

    def _adapter_for(self, model: str) -> Any:
        """The API ``model`` field picks a named adapter (vLLM style); anything naming us -> default."""
        if model in self.engine.loaded and model != self.watcher.current:
            return model
        if (model in {self.name, *self.aliases, str(self.config.model), str(self.model_path), "default"}
                or model == self.watcher.current):
            return DEFAULT
        names = [self.name, *self.aliases, *sorted(self.engine.loaded)]
        raise ApiError(f"The model `{model}` does not exist; this server serves {names}. An agent that hard-codes "
                       f"its model name: start the server with --served-model-name {model} (repeatable).", 404, "model")

    def _prompt(self, messages: list[dict[str, Any]], tools: Any, params: SamplingParams) -> list[int]:
        try:
            prompt_ids = render_prompt(self.engine.tokenizer, messages, tools)
        except Exception as exc:
            raise ApiError(f"the chat template could not render these messages: {exc}", param="messages") from exc
        room = self.engine.max_positions - len(prompt_ids)
        if room < 1:
            raise ApiError(f"the prompt has {len(prompt_ids)} tokens; this model's context is {self.engine.max_positions}",
                           param="messages")
        params.max_tokens = min(params.max_tokens, room)
        return prompt_ids

def _fail(span: Any, exc: Exception) -> None:
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc)))
    span.set_attribute("error.type", type(exc).__name__)


# --------------------------------------------------------------------------- wiring
def _resolve_model(config: ServeConfig) -> Path:
    if str(config.model) == "demo":
        from spanrl.serve.models import prepare_demo_model

        return prepare_demo_model(config.data)
    path = Path(config.model)
    if not (path / "config.json").is_file():
        raise InputError(f"--model {path}: no config.json there; pass a local model folder "
                         "(transformers save_pretrained layout) or `demo`")
    return path


def _make_watcher(engine: Engine, config: ServeConfig) -> AdapterWatcher:
    if config.adapter is None:
        return AdapterWatcher(engine)
    if config.adapter == "LATEST":
        return AdapterWatcher(engine, adapters_root=adapters_dir(config.data))
    path = Path(config.adapter)
    if path.name == "LATEST" and not path.is_dir():
        return AdapterWatcher(engine, adapters_root=path.parent)
    if not is_peft_folder(path):
        raise InputError(f"--adapter {path}: no {ADAPTER_CONFIG} there; pass a PEFT adapter folder or LATEST")
    return AdapterWatcher(engine, fixed=path)


@dataclass
class RunningServer:
    """A server started by ``serve_in_background``: its URL, the ChatServer, and ``stop()``."""

    url: str
    server: ChatServer
    _loop: asyncio.AbstractEventLoop
    _runner: web.AppRunner
    _thread: threading.Thread

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


def serve_in_background(config: ServeConfig, span_exporter: Any = None) -> RunningServer:
    """Start the server on its own event-loop thread (tests, notebooks); ``port=0`` picks a free port."""
    server = ChatServer(config, span_exporter)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(server.app(), handle_signals=False)

    async def start() -> str:
        await runner.setup()
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        return f"http://{config.host}:{port}"

    thread = threading.Thread(target=loop.run_forever, name="spanrl-serve-http", daemon=True)
    thread.start()
    url = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=60)
    return RunningServer(url, server, loop, runner, thread)


def run_server(config: ServeConfig, span_exporter: Any = None) -> None:
    """Serve until SIGINT/SIGTERM; prints the URL once listening; flushes spans on the way out."""
    server = ChatServer(config, span_exporter)
    runner = web.AppRunner(server.app(), handle_signals=False)

    async def main() -> None:
        await runner.setup()
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"spanrl serve: {server.name} on http://{config.host}:{port}/v1 "
              f"(adapter: {config.adapter or 'none'})", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    from spanrl.processes import run_until_signalled

    run_until_signalled(main)
