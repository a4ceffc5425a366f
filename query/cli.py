"""``spanrl sql``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.config import click_options, resolve
from spanrl.options import data_option
from spanrl.query.config import SqlConfig, SqlFlags


@click.command()
@data_option
@click.argument("query", required=False)
@click_options(SqlFlags, "sql_file")
@click_options(SqlConfig, "format")
@click_options(SqlFlags, "out")
@click_options(SqlConfig, "memory_limit", "config_file")
def sql(data: Path, query: str | None, sql_file: Path | None, out: Path | None, **flags: object) -> None:
    """Query the trace lake: spans, logs, llm_calls, tool_calls, rewards, rollouts (read-only).

    \b
    Example:
      spanrl sql "select model, sum(output_tokens) from llm_calls group by 1"
    """
    from spanrl.query.sql import sql_command

    cfg = resolve(SqlConfig, {**flags, "data": data}, "sql")  # flags > [sql] in spanrl.toml > defaults
    per_call = resolve(SqlFlags, {"sql_file": sql_file, "out": out}, None)
    sql_command(cfg.data, query, per_call.sql_file, cfg.format, per_call.out, cfg.memory_limit)
