"""Every command answers -h/--help, and bad input exits 2 (docs/architecture.md, CLI contract)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.sqlfiles import drop_scratch

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


@pytest.mark.parametrize("args", [
    ["ingest"], ["transitions", "build"], ["transitions", "clean", "--keep", "2"],
    # the readers (and the writers that read a snapshot) share one check (spanrl/roots.py); before it,
    # `spanrl sql` and `spanrl adapters list` answered from nothing with exit 0 (issue 44)
    ["sql", "select 1"], ["export", "--format", "parquet", "--out", "out"], ["tasks"], ["adapters", "list"],
    ["report"], ["ui"], ["train", "--model", "m"], ["judge", "--judge-url", "http://x", "--judge-model", "m"],
], ids=lambda a: " ".join(a[:2]))
def test_a_missing_data_root_is_refused_not_created(tmp_path, args: list[str]) -> None:
    """A typo in --data must not leave an empty tree behind and report success (issue 25)."""
    root = tmp_path / "typo" / "data"
    result = CliRunner().invoke(cli, [*args, "--data", str(root)])
    assert result.exit_code == 2, result.output
    assert "no such data root" in result.output and not (tmp_path / "typo").exists()


@pytest.mark.parametrize(("args", "flag"), [(["export", "--out", "out"], "--format"), (["train"], "--model")],
                         ids=lambda a: a[0] if isinstance(a, list) else a)
def test_a_required_flag_left_out_is_a_usage_error(args: list[str], flag: str) -> None:
    """`spanrl export` without --format was a TypeError traceback (exit 1): click 8.3+ takes the explicit
    default=None the flags had as a value, so `required` never fired (issue 44)."""
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert f"Missing option '{flag}'" in result.output


@pytest.mark.parametrize("args", [
    ["ingest", "--input", "{tmp}/spans.jsonl", "--no-transitions"],
    ["collector", "--embedded", "--http-port", "0", "--grpc-port", "0"],
], ids=lambda a: a[0])
def test_a_creating_command_makes_only_the_last_folder(tmp_path, args: list[str]) -> None:
    (tmp_path / "spans.jsonl").write_text("{}\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(cli, [*args, "--data", str(tmp_path / "a" / "b")])
    assert result.exit_code == 2, result.output
    assert "its parent folder" in result.output and not (tmp_path / "a").exists()
    if args[0] == "ingest":  # with its parent there, the root's own folder is made
        result = CliRunner().invoke(cli, [*args, "--data", str(tmp_path / "new")])
        assert result.exit_code == 0, result.output
        assert (tmp_path / "new" / "lake").is_dir()


def test_an_input_that_matches_nothing_is_an_error(tmp_path) -> None:
    (tmp_path / "data").mkdir()
    result = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path / "data"), "--input",
                                      str(tmp_path / "missing*.jsonl")])
    assert result.exit_code == 2, result.output
    assert "matches no file" in result.output


@pytest.mark.parametrize("value", ["-5GB", "0GB", "1KB", "lots"])
def test_a_memory_limit_that_cannot_work_is_refused(tmp_path, value: str) -> None:
    drop_scratch()  # as in a fresh process: a new scratch database could not even reset a 0-byte limit (exit 1)
    result = CliRunner().invoke(cli, ["sql", "--data", str(tmp_path), "--memory-limit", value, "select 1"])
    assert result.exit_code == 2, result.output
    assert "--memory-limit" in result.output


def test_a_query_out_of_memory_says_to_raise_the_limit(tmp_path) -> None:
    """DuckDB's own hint (SET memory_limit) is refused in spanrl sql: the message names the flag instead."""
    big = "select length(string_agg(repeat('x', 1000), ',')) from range(100000)"  # a 100 MB string
    result = CliRunner().invoke(cli, ["sql", "--data", str(tmp_path), "--memory-limit", "16MB", big])
    assert result.exit_code == 2, result.output
    assert "Out of Memory" in result.output and "give it more memory with --memory-limit" in result.output
    assert CliRunner().invoke(cli, ["sql", "--data", str(tmp_path), "--memory-limit", "1GB", big]).exit_code == 0
