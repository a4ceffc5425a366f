"""Every command answers -h/--help, and bad input exits 2 (DESIGN §0)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from spanrl.cli import cli

COMMANDS = [
    ["collector"],
    ["ingest"],
    ["transitions"],
    ["transitions", "build"],
    ["sql"],
    ["train"],
    ["serve"],
    ["demo"],
    ["report"],
    ["export"],
]


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_help(command: list[str], flag: str) -> None:
    result = CliRunner().invoke(cli, [*command, flag])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    if command != ["transitions"]:
        assert "Example" in result.output


def test_bad_flag_exits_2() -> None:
    result = CliRunner().invoke(cli, ["ingest", "--credit", "nonsense"])
    assert result.exit_code == 2


def test_python_m_spanrl() -> None:
    out = subprocess.run([sys.executable, "-m", "spanrl", "--version"], capture_output=True, text=True, check=True)
    assert "spanrl" in out.stdout


def test_sql_help_does_not_import_torch() -> None:
    code = "import sys; from spanrl.cli import cli; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
