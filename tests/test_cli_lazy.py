"""`spanrl --help` imports no stage (issue 31: 3.7 s before): the command list comes from
spanrl.cli.SHORT_HELP, which must say what each command's own docstring says."""

from __future__ import annotations

import subprocess
import sys

import click

from spanrl.cli import COMMANDS, SHORT_HELP, cli

HEAVY = ("torch", "transformers", "duckdb", "pyarrow", "numpy", "rich", "starlette", "uvicorn", "fastapi",
         "spanrl.ingest", "spanrl.transitions", "spanrl.ui", "spanrl.trainer")


def test_help_imports_no_stage_and_no_heavy_library() -> None:
    """Checked by what is in sys.modules after `spanrl --help`, in a fresh interpreter (not by timing)."""
    code = ("import sys; from click.testing import CliRunner; from spanrl.cli import cli\n"
            "r = CliRunner().invoke(cli, ['--help']); assert r.exit_code == 0, r.output\n"
            "assert 'ingest' in r.output and 'ui' in r.output, r.output\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"spanrl --help imported {out.stdout.strip()}"


def test_short_help_lines_match_the_commands() -> None:
    """Every command is listed, and its line is the first paragraph of its own docstring."""
    ctx = click.Context(cli)
    assert set(SHORT_HELP) == set(COMMANDS) | {"ingest"}
    for name in SHORT_HELP:
        assert cli.get_command(ctx, name).get_short_help_str(1000) == SHORT_HELP[name], name
