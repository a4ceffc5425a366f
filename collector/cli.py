"""``spanrl collector``: otelcol-contrib when installed, else the embedded OTLP receiver."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from spanrl.collector.config import CollectorConfig, make_collector_config
from spanrl.config import click_options
from spanrl.errors import InputError
from spanrl.options import data_option

# the flags are CollectorConfig's fields (spanrl.config.click_options): default and help live there
COLLECTOR_FLAGS = ("embedded", "host", "http_port", "grpc_port", "rotate_mb", "token", "fsync", "max_body_mib", "queue_mib",
                   "read_timeout_s", "idle_timeout_s", "report_s", "discard", "config_file")


@click.command()
@data_option
@click_options(CollectorConfig, *COLLECTOR_FLAGS)
def collector(data: Path, **flags: object) -> None:
    """Receive OTLP traces and logs and write span files under DATA/otel/.

    Runs otelcol-contrib with otel-config.yaml when the binary is on PATH (or in $OTELCOL_BIN),
    else the embedded receiver, which writes the same files. Stops cleanly on SIGTERM/Ctrl-C.

    \b
    Example:
      spanrl collector --data ./spanrl-data &
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
    """
    from spanrl.collector.otelcol import find_config, find_otelcol, otelcol_env, run_otelcol

    # flags > $SPANRL_COLLECTOR_TOKEN > [collector] in spanrl.toml > defaults; checked before the root is made
    config = make_collector_config(data, **flags)
    if not config.discard:
        from spanrl.options import new_data_root

        new_data_root(data)  # the data root's own folder, never a tree a typo made up
    binary = None if config.embedded or config.discard else find_otelcol()
    if binary is not None:
        if config.token or config.fsync:
            raise InputError("--token and --fsync need the embedded receiver; add --embedded")
        config_path = find_config()
        from spanrl.collector.lock import CollectorLock, connect_host

        lock = CollectorLock(data).acquire()  # held until this process exits
        lock.advertise(f"http://{connect_host(config.host)}:{config.http_port}")  # `spanrl rollout` beside it sends there
        click.echo(f"spanrl collector: running {binary} --config {config_path} (data={data}/otel)", err=True)
        sys.exit(run_otelcol(binary, config_path, otelcol_env(data, config.host, config.http_port, config.grpc_port,
                                                              config.rotate_mb)))
    _run_embedded(config, why="" if config.embedded else "; otelcol-contrib not found")


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
