"""``spanrl sql``."""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option


@click.command()
@data_option
@click.argument("query", required=False)
@click.option("-f", "--file", "sql_file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Read the query from a .sql file.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
              show_default=True, help="Output format.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write to FILE.")
@click.option("--memory-limit", default="2GB", show_default=True,
              help="DuckDB memory limit for the query (no spill: a query past it fails with a message).")
def sql(data: Path, query: str | None, sql_file: Path | None, fmt: str, out: Path | None, memory_limit: str) -> None:
    """Query the trace lake: spans, logs, llm_calls, tool_calls, rewards, rollouts (read-only).

    \b
    Example:
      spanrl sql "select model, sum(output_tokens) from llm_calls group by 1"
    """
    from spanrl.query.sql import sql_command

    sql_command(data, query, sql_file, fmt, out, memory_limit)
