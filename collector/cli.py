"""``spanrl collector``: otelcol-contrib when installed, else the embedded OTLP receiver."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.errors import InputError
from spanrl.options import data_option


@click.command()
@data_option
@click.option("--embedded", is_flag=True, help="Use the embedded receiver even when otelcol-contrib is installed.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (0.0.0.0 exposes it).")
@click.option("--http-port", default=4318, show_default=True, type=int, help="OTLP/HTTP port.")
@click.option("--grpc-port", default=4317, show_default=True, type=int, help="OTLP/gRPC port.")
@click.option("--rotate-mb", default=64, show_default=True, type=float, help="Rotate span files at this size.")
@click.option("--token", envvar="SPANRL_COLLECTOR_TOKEN", default=None, help="Require 'Authorization: Bearer TOKEN'.")
@click.option("--fsync", is_flag=True, help="fsync each batch before acknowledging it (durable on power loss).")
def collector(data: Path, embedded: bool, host: str, http_port: int, grpc_port: int, rotate_mb: float,
              token: str | None, fsync: bool) -> None:
    """Receive OTLP traces and logs and write span files under DATA/otel/.

    \b
    Example:
      spanrl collector --data ./spanrl-data &
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
    """
    raise InputError("the collector is not built yet")
