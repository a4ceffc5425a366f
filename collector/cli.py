"""``spanrl collector``: otelcol-contrib when installed, else the embedded OTLP receiver."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from spanrl.errors import InputError
from spanrl.options import data_option

if TYPE_CHECKING:
    from spanrl.collector.config import CollectorConfig


@click.command()
@data_option
@click.option("--embedded", is_flag=True, help="Use the embedded receiver even when otelcol-contrib is installed.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (0.0.0.0 exposes it).")
@click.option("--http-port", default=4318, show_default=True, type=int, help="OTLP/HTTP port.")
@click.option("--grpc-port", default=4317, show_default=True, type=int, help="OTLP/gRPC port.")
@click.option("--rotate-mb", default=64, show_default=True, type=float, help="Rotate span files at this size.")
@click.option("--token", envvar="SPANRL_COLLECTOR_TOKEN", default=None, help="Require 'Authorization: Bearer TOKEN'.")
@click.option("--fsync", is_flag=True, help="fsync each batch before acknowledging it (durable on power loss).")
@click.option("--max-body-mb", default=64.0, show_default=True, type=float,
              help="Largest request after decompression (413 above).")
@click.option("--memory-mb", default=256.0, show_default=True, type=float,
              help="Memory budget of requests being read, decoded or queued (429 / UNAVAILABLE above).")
@click.option("--read-timeout", default=30.0, show_default=True, type=float,
              help="Seconds to receive one request body; slower senders get 408 (gRPC: DEADLINE_EXCEEDED).")
@click.option("--idle-timeout", default=10.0, show_default=True, type=float,
              help="Longest pause inside a request body before the sender is cut off.")
@click.option("--report-interval", default=60.0, show_default=True, type=float,
              help="Seconds between log lines counting refused requests (0: only at shutdown).")
@click.option("--discard", is_flag=True, hidden=True, help="Parse and drop everything (benchmark baseline).")
def collector(data: Path, embedded: bool, host: str, http_port: int, grpc_port: int, rotate_mb: float,
              token: str | None, fsync: bool, max_body_mb: float, memory_mb: float, read_timeout: float, idle_timeout: float,
              report_interval: float, discard: bool) -> None:
    """Receive OTLP traces and logs and write span files under DATA/otel/.

    Runs otelcol-contrib with otel-config.yaml when the binary is on PATH (or in $OTELCOL_BIN),
    else the embedded receiver, which writes the same files. Stops cleanly on SIGTERM/Ctrl-C.

    \b
    Example:
      spanrl collector --data ./spanrl-data &
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
    """
    from spanrl.collector.otelcol import find_config, find_otelcol, otelcol_env, run_otelcol

    if not discard:
        from spanrl.options import new_data_root

        new_data_root(data)  # the data root's own folder, never a tree a typo made up
    binary = None if embedded or discard else find_otelcol()
    if binary is not None:
        if token or fsync:
            raise InputError("--token and --fsync need the embedded receiver; add --embedded")
        config_path = find_config()
        from spanrl.collector.lock import CollectorLock, connect_host

        lock = CollectorLock(data).acquire()  # held until this process exits
        lock.advertise(f"http://{connect_host(host)}:{http_port}")  # `spanrl rollout` beside it sends there
        click.echo(f"spanrl collector: running {binary} --config {config_path} (data={data}/otel)", err=True)
        sys.exit(run_otelcol(binary, config_path, otelcol_env(data, host, http_port, grpc_port, rotate_mb)))
    from spanrl.collector.config import CollectorConfig

    config = CollectorConfig(data_root=data, host=host, http_port=http_port, grpc_port=grpc_port,
                             rotate_mb=rotate_mb, token=token, fsync=fsync, max_body_mib=max_body_mb,
                             queue_mib=memory_mb, read_timeout_s=read_timeout, idle_timeout_s=idle_timeout,
                             report_s=report_interval, discard=discard)
    _run_embedded(config, why="" if embedded else "; otelcol-contrib not found")


def _run_embedded(config: CollectorConfig, why: str) -> None:
    from spanrl.collector.server import Endpoints, run_until_signal

    host, discard = config.host, config.discard

    def ready(ep: Endpoints) -> None:
        mode = "; discard mode: nothing is written" if discard else ""
        click.echo(f"spanrl collector ready http={host}:{ep.http_port} grpc={host}:{ep.grpc_port} "
                   f"data={config.otel_dir} (embedded receiver{why}{mode})")
        sys.stdout.flush()

    def report(line: str) -> None:
        click.echo(line, err=True)
        sys.stderr.flush()

    stats = asyncio.run(run_until_signal(config, ready, report))
    summary = " ".join(f"{k}={v}" for k, v in sorted(stats.items())) or "nothing received"
    click.echo(f"spanrl collector stopped: {summary}", err=True)
