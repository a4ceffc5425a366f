"""What ``spanrl gateway`` users set: ``GatewayConfig``, every field a ``spanrl.config.knob`` (the flags
are generated from them). Values come from flags, then ``$SPANRL_GATEWAY_TOKEN`` / ``$SPANRL_UPSTREAM_KEY``,
then the ``[gateway]`` section of ``spanrl.toml``, then these defaults (``spanrl.config.resolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spanrl.config import check_choices, knob, resolve
from spanrl.errors import InputError
from spanrl.gateway.asking import LOGPROB_MODES
from spanrl.gateway.delivery import MIB
from spanrl.options import DEFAULT_DATA

MAX_SPAN_MIB_RANGE = (1 / 16, 48.0)  # the OTLP exporter refuses requests over 64 MiB itself


@dataclass
class GatewayConfig:
    """What ``spanrl gateway`` users set."""

    upstream: str = knob(help="The upstream's OpenAI base URL (vLLM, SGLang, spanrl serve, a hosted API), e.g. "
                         "http://127.0.0.1:8000/v1; /v1/messages goes to its /messages.", required=True)
    data: Path = knob(Path(DEFAULT_DATA), "Data root (span files go to DATA/otel without --otlp).")
    config_file: Path | None = knob(None, "spanrl.toml with a [gateway] table (default: DATA/spanrl.toml, then "
                                    "./spanrl.toml).", flag="--config", click_type=click.Path(dir_okay=False, path_type=Path))
    host: str = knob("127.0.0.1", "Bind address (without --token, anyone who reaches it spends the upstream and "
                     "writes training data: keep it local).")
    port: int = knob(8400, "Port (0 picks a free one; the URL is printed).")
    otlp: str | None = knob(None, "OTLP/HTTP base URL for the spans (default: an embedded collector writing DATA/otel).")
    token: str | None = knob(None, "Require 'Authorization: Bearer TOKEN' from agents (env SPANRL_GATEWAY_TOKEN); "
                             "without it the agent's Authorization header is passed to the upstream.",
                             env="SPANRL_GATEWAY_TOKEN")
    upstream_key: str | None = knob(None, "API key sent to the upstream (env SPANRL_UPSTREAM_KEY; default: the agent's "
                                    "own header).", env="SPANRL_UPSTREAM_KEY")
    token_ids: str = knob("auto", "Ask the upstream for engine token ids (vLLM's return_token_ids); auto stops asking "
                          "when the upstream rejects the field.", choices=("auto", "on", "off"))
    upstream_logprobs: str = knob(
        "auto", "Ask the upstream for the sampled tokens' log-probs (the behaviour policy RL needs) on chat and text "
        "completions the agent sent without them, record them, and take them out of the agent's answer. auto: while "
        "token ids are asked (spanrl serve, vLLM), stopping at the first 400 over it; always; never. A refusal is "
        "retried without the field, never failing the agent's call.", choices=LOGPROB_MODES)
    prompts: bool = knob(False, "Replace each call's system prompt (chat system/developer message, Responses "
                         "instructions, Messages system) with its agent's LATEST in DATA/prompts (`spanrl prompts`); the "
                         "agent is the x-spanrl-agent header, else the model, else the sent prompt's sha256 "
                         "(docs/prompts.md).")
    capture_messages: bool = knob(True, "Record gen_ai.input/output.messages on the spans (token ids are always "
                                  "recorded).", flag="--capture-messages/--no-capture-messages", show="capture-messages")
    allow_hosts: tuple[str, ...] = knob(
        (), "Also answer to this Host name (repeatable). By default only the loopback names and the --host address are "
        "accepted, against DNS rebinding; requests from web pages (another Origin) get 403.",
        flag="--allow-host", multiple=True, metavar="NAME", show=False)
    max_span_mib: float = knob(
        8.0, "Most bytes of one call's recorded content (messages, tool definitions, token ids); above it the text is "
        "cut with a marker (the token ids kept whole if they fit, else dropped), counted as truncated. Also the "
        "largest export request: keep it under the collector's limit (embedded: 64 MiB; OpenTelemetry Collector: "
        "20 MiB).")
    max_request_mib: float = knob(64.0, "An agent's request body, at most (413 above); no flag: spanrl.toml only.")

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        self.token, self.upstream_key = self.token or None, self.upstream_key or None  # empty: none
        if not self.upstream.startswith(("http://", "https://")):
            raise InputError(f"--upstream {self.upstream!r}: give the upstream's base URL, e.g. http://127.0.0.1:8000/v1")
        self.upstream = self.upstream.rstrip("/")
        check_choices(self)
        lo, hi = MAX_SPAN_MIB_RANGE
        if not lo <= self.max_span_mib <= hi:
            raise InputError(f"--max-span-mib must be between {lo} and {hi:g} (the OTLP exporter refuses requests "
                             f"over 64 MiB), got {self.max_span_mib:g}")
        if self.max_request_mib <= 0:
            raise InputError(f"max_request_mib must be positive, got {self.max_request_mib}")
        self.allow_hosts = (self.allow_hosts,) if isinstance(self.allow_hosts, str) else tuple(self.allow_hosts)

    @property
    def max_span_bytes(self) -> int:
        """One call's recorded content, and one export request, at most."""
        return int(self.max_span_mib * MIB)

    @property
    def max_request_bytes(self) -> int:
        return int(self.max_request_mib * MIB)


def make_gateway_config(**flags: Any) -> GatewayConfig:
    """Flags (None: not given) > $SPANRL_GATEWAY_TOKEN, $SPANRL_UPSTREAM_KEY > [gateway] in spanrl.toml > defaults."""
    return resolve(GatewayConfig, flags, "gateway")
