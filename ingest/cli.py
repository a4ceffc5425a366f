"""Stage 1's flags for ``spanrl ingest``; the command itself (lake, then snapshot) is wired in
``spanrl.cli`` because it runs two stages, and a stage never imports a later one."""

from __future__ import annotations

import click


def stage1_options(func):
    """The flags only stage 1 (span files -> lake) reads."""
    func = click.option("--no-transitions", is_flag=True, default=None, help="Only build the lake (stage 1).")(func)
    return click.option("--input", "input", default=None, help="Glob of span files to read (default: DATA/otel/*).")(func)
