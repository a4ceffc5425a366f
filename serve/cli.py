"""``spanrl serve``.

torch/transformers/peft are imported inside the command body only (the ``train`` extra).
"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options
from spanrl.options import data_option
from spanrl.serve.config import ServeConfig, make_serve_config

# the flags are ServeConfig's fields (spanrl.config.click_options): default and help live there
SERVE_FLAGS = ("model", "adapter", "host", "port", "served_model_names", "max_batch", "batch_wait_ms", "max_tokens",
               "device", "threads", "continuous_batching", "otlp_endpoint", "capture_messages", "temperature", "token",
               "allow_any_adapter_path", "agent_adapters", "config_file")


@click.command()
@data_option
@click_options(ServeConfig, *SERVE_FLAGS)
def serve(data: Path, **flags: object) -> None:
    """OpenAI-compatible chat server (transformers + peft) that traces its own token ids.

    Batches concurrent requests, hot-loads a new adapter when adapters/LATEST changes (between
    batches, no request dropped), and emits one span per completion with the exact prompt and
    response token ids (child of the caller's traceparent).

    \b
    Example:
      spanrl serve --model demo --adapter LATEST --port 8000
    """
    import logging

    from spanrl.serve.server import run_server

    config = make_serve_config(data=data, **flags)  # flags > $SPANRL_SERVE_TOKEN > [serve] in spanrl.toml > defaults
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_server(config)
