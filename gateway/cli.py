"""``spanrl gateway``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options
from spanrl.gateway.config import GatewayConfig, make_gateway_config
from spanrl.options import data_option

# the flags are GatewayConfig's fields (spanrl.config.click_options): default, choices and help live there
GATEWAY_FLAGS = ("upstream", "host", "port", "otlp", "token", "upstream_key", "token_ids", "upstream_logprobs", "prompts",
                 "capture_messages", "allow_hosts", "max_span_mib", "config_file")


@click.command()
@data_option
@click_options(GatewayConfig, *GATEWAY_FLAGS)
def gateway(data: Path, **flags: object) -> None:
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

    from spanrl.gateway.server import run_gateway

    config = make_gateway_config(data=data, **flags)  # flags > env > [gateway] in spanrl.toml > defaults
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_gateway(config)
