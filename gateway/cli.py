"""``spanrl gateway``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option


@click.command()
@data_option
@click.option("--upstream", required=True, help="The upstream's OpenAI base URL (vLLM, SGLang, spanrl serve, a hosted API), "
              "e.g. http://127.0.0.1:8000/v1; /v1/messages goes to its /messages.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Bind address (without --token, anyone who reaches it spends the upstream and writes training "
                   "data: keep it local).")
@click.option("--port", default=8400, show_default=True, type=int, help="Port (0 picks a free one; the URL is printed).")
@click.option("--otlp", default=None, help="OTLP/HTTP base URL for the spans (default: an embedded collector writing DATA/otel).")
@click.option("--token", envvar="SPANRL_GATEWAY_TOKEN", default=None,
              help="Require 'Authorization: Bearer TOKEN' from agents (env SPANRL_GATEWAY_TOKEN); without it the "
                   "agent's Authorization header is passed to the upstream.")
@click.option("--upstream-key", envvar="SPANRL_UPSTREAM_KEY", default=None,
              help="API key sent to the upstream (env SPANRL_UPSTREAM_KEY; default: the agent's own header).")
@click.option("--token-ids", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Ask the upstream for engine token ids (vLLM's return_token_ids); auto stops asking when the "
                   "upstream rejects the field.")
@click.option("--upstream-logprobs", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Ask the upstream for the sampled tokens' log-probs (the behaviour policy RL needs) on chat and "
                   "text completions the agent sent without them, record them, and take them out of the agent's "
                   "answer. auto: while token ids are asked (spanrl serve, vLLM), stopping at the first 400 over it; "
                   "always; never. A refusal is retried without the field, never failing the agent's call.")
@click.option("--prompts", "prompts", is_flag=True,
              help="Replace each call's system prompt (chat system/developer message, Responses instructions, Messages "
                   "system) with its agent's LATEST in DATA/prompts (`spanrl prompts`); the agent is the "
                   "x-spanrl-agent header, else the model, else the sent prompt's sha256 (docs/prompts.md).")
@click.option("--capture-messages/--no-capture-messages", default=True, show_default=True,
              help="Record gen_ai.input/output.messages on the spans (token ids are always recorded).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer to this Host name (repeatable). By default only the loopback names and the --host "
                   "address are accepted, against DNS rebinding; requests from web pages (another Origin) get 403.")
@click.option("--max-span-mib", default=8.0, show_default=True, type=float,
              help="Most bytes of one call's recorded content (messages, tool definitions, token ids); above it the "
                   "text is cut with a marker (the token ids kept whole if they fit, else dropped), counted as "
                   "truncated. Also the largest export request: keep it under the collector's limit (embedded: "
                   "64 MiB; OpenTelemetry Collector: 20 MiB).")
def gateway(data: Path, upstream: str, host: str, port: int, otlp: str | None, token: str | None,
            upstream_key: str | None, token_ids: str, upstream_logprobs: str, capture_messages: bool, allow_hosts: tuple[str, ...],
            max_span_mib: float, prompts: bool = False) -> None:
    """OpenAI-compatible proxy that records every LLM call of any agent with engine token ids.

    Point an agent's OPENAI_BASE_URL at its /v1 (ANTHROPIC_BASE_URL at its root; or `spanrl rollout
    --policy-url` at its /v1): each chat completion, completion, Responses API call and Anthropic
    Messages call is forwarded to --upstream asking for token ids where the API can return them, and
    one span per call (GenAI conventions + spanrl.* token ids) goes to DATA/otel or --otlp. Every
    other /v1 route (embeddings, models, files, ...) is passed through unchanged and counted. See
    docs/gateway.md.

    \b
    Example:
      spanrl gateway --upstream http://127.0.0.1:8000/v1 --port 8400
    """
    import logging

    from spanrl.gateway.delivery import MIB
    from spanrl.gateway.server import GatewayConfig, run_gateway

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_gateway(GatewayConfig(upstream=upstream, data=data, host=host, port=port, otlp=otlp, token=token or None,
                              upstream_key=upstream_key or None, token_ids=token_ids,
                              upstream_logprobs=upstream_logprobs, capture_messages=capture_messages,
                              allow_hosts=allow_hosts, max_span_bytes=int(max_span_mib * MIB), prompts=prompts))
