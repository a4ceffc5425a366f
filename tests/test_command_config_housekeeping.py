"""Issue 46, the last commands: `spanrl sql` ([sql]), `spanrl lake compact|gc` ([lake]), and the per-call
switches of `lake prune`, `transitions clean`, `train` and `adapters` (flags classes, no section) take
their flags from config knobs (tests/test_command_config.py, KNOB_FLAG_MODULES, checks no click option
is written by hand). A section key sets a default, a flag beats it, an unknown key is refused with
spanrl.toml:LINE, and `spanrl sql -f FILE` keeps its short form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.config import SECTIONS, default_of, resolve
from spanrl.ingest.config import RunConfig
from spanrl.ingest.lake_config import LakeCommandConfig
from spanrl.query.config import SqlConfig
from spanrl.trainer.config import TrainRunFlags


class Captured(Exception):
    """Raised by a replaced entry point, carrying what it was called with."""


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPANRL_DATA", raising=False)


def _record(monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    def record(*args: Any, **kw: Any) -> None:
        raise Captured(args, kw)

    monkeypatch.setattr(target, record)


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str | None, argv: list[str]) -> Any:
    """``spanrl <argv> --data DATA`` with DATA/spanrl.toml holding ``toml``: the (args, kwargs) the
    replaced entry point got, else click's result."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    if toml is not None:
        (data / "spanrl.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [*argv, "--data", str(data)])
    if isinstance(result.exception, Captured):
        return result.exception.args
    return result


def _sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str | None, *extra: str) -> Any:
    _record(monkeypatch, "spanrl.query.sql.sql_command")
    return _invoke(tmp_path, monkeypatch, toml, ["sql", "select 1", *extra])


def _compact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str | None, *extra: str) -> Any:
    _record(monkeypatch, "spanrl.ingest.housekeeping.compact_lake")
    return _invoke(tmp_path, monkeypatch, toml, ["lake", "compact", *extra])


def test_the_new_sections_are_known() -> None:
    assert {"sql", "lake"} <= set(SECTIONS)


def test_a_sql_key_sets_the_default_and_a_flag_beats_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = '[sql]\nformat = "csv"\nmemory_limit = "1GB"\n'
    (_data, query, _file, fmt, _out, memory_limit), _ = _sql(tmp_path, monkeypatch, toml)
    assert (query, fmt, memory_limit) == ("select 1", "csv", "1GB")
    (_data, _query, _file, fmt, _out, memory_limit), _ = _sql(tmp_path, monkeypatch, toml, "--format", "json",
                                                               "--memory-limit", "512MB")
    assert (fmt, memory_limit) == ("json", "512MB")


def test_sql_defaults_come_from_the_knobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (_data, _query, _file, fmt, out, memory_limit), _ = _sql(tmp_path, monkeypatch, None)
    assert (fmt, out, memory_limit) == ("table", None, "auto")
    assert default_of(SqlConfig, "memory_limit") == default_of(RunConfig, "memory_limit")  # one home


def test_a_bad_format_in_the_file_is_refused_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sql(tmp_path, monkeypatch, '[sql]\nformat = "xml"\n')
    assert result.exit_code == 2
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:2: format = 'xml' in [sql]: choose one of table, csv" in result.output


def test_sql_short_file_flag_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    query = tmp_path / "q.sql"
    query.write_text("select 2")
    _record(monkeypatch, "spanrl.query.sql.sql_command")
    for spelling in ("-f", "--file"):
        (_data, text, sql_file, *_rest), _ = _invoke(tmp_path, monkeypatch, None, ["sql", spelling, str(query)])
        assert (text, sql_file) == (None, query)
    missing = _invoke(tmp_path, monkeypatch, None, ["sql", "-f", str(tmp_path / "nope.sql")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_sql_runs_with_the_short_flag(tmp_path: Path) -> None:
    """End to end, no stand-in: ``-f FILE`` reads the query, ``--format csv`` writes it."""
    query = tmp_path / "q.sql"
    query.write_text("select 41 + 1 as answer")
    (tmp_path / "data").mkdir()
    result = CliRunner().invoke(cli, ["sql", "-f", str(query), "--format", "csv", "--data", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert "answer" in result.output and "42" in result.output


def test_a_lake_key_sets_the_default_and_a_flag_beats_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = '[lake]\nmin_files = 5\nmemory_limit = "1GB"\n'
    _args, kw = _compact(tmp_path, monkeypatch, toml)
    assert (kw["min_files"], kw["memory_limit"], kw["dry_run"]) == (5, "1GB", False)
    _args, kw = _compact(tmp_path, monkeypatch, toml, "--min-files", "3", "--memory-limit", "512MB", "--dry-run")
    assert (kw["min_files"], kw["memory_limit"], kw["dry_run"]) == (3, "512MB", True)
    _args, kw = _compact(tmp_path, monkeypatch, "")
    assert (kw["min_files"], kw["memory_limit"]) == (2, "auto")


def test_lake_gc_keep_days_from_the_file_and_the_flag(tmp_path: Path) -> None:
    (tmp_path / "spanrl.toml").write_text("[lake]\ngc_keep_days = 30\n")
    assert resolve(LakeCommandConfig, {"data": tmp_path}, "lake", env={}).gc_keep_days == 30
    assert resolve(LakeCommandConfig, {"data": tmp_path, "gc_keep_days": 1.5}, "lake", env={}).gc_keep_days == 1.5
    (tmp_path / "spanrl.toml").write_text("")
    assert resolve(LakeCommandConfig, {"data": tmp_path}, "lake", env={}).gc_keep_days == 7


@pytest.mark.parametrize(("section", "argv"), [("sql", ["sql", "select 1"]), ("lake", ["lake", "compact"])])
def test_an_unknown_key_is_refused_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, section: str,
                                                 argv: list[str]) -> None:
    _record(monkeypatch, "spanrl.query.sql.sql_command")
    _record(monkeypatch, "spanrl.ingest.housekeeping.compact_lake")
    result = _invoke(tmp_path, monkeypatch, f"# settings\n[{section}]\n\nmin_file = 2\n", argv)
    assert getattr(result, "exit_code", None) == 2, result
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:4: unknown key 'min_file' in [{section}]" in result.output


def test_an_unknown_section_names_the_real_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sql(tmp_path, monkeypatch, "[sqll]\n")
    assert result.exit_code == 2
    assert f"{tmp_path / 'data' / 'spanrl.toml'}:1: unknown section [sqll] (did you mean 'sql'?); " \
           f"known sections: {', '.join(SECTIONS)}" in result.output


@pytest.mark.parametrize("argv", [["lake", "prune"], ["transitions", "clean"], ["adapters", "clean"]])
def test_required_flags_stay_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    result = _invoke(tmp_path, monkeypatch, None, argv)
    assert result.exit_code == 2
    assert "Missing option '--keep" in result.output


def test_train_run_flags_are_knobs() -> None:
    from spanrl.trainer.cli import train

    ctx = train.make_context("train", ["--model", "m"])
    got = resolve(TrainRunFlags, {k: ctx.params[k] for k in ("notify", "progress", "promote")}, None, env={})
    assert (got.notify, got.progress, got.promote) == (None, True, True)
    ctx = train.make_context("train", ["--model", "m", "--no-progress", "--no-promote", "--notify", "http://v"])
    got = resolve(TrainRunFlags, {k: ctx.params[k] for k in ("notify", "progress", "promote")}, None, env={})
    assert (got.notify, got.progress, got.promote) == ("http://v", False, False)


def test_adapters_out_is_trains_out() -> None:
    """One home for --out: the adapters commands take train's knob (same help, same type)."""
    from spanrl.trainer.cli import adapters, train

    def out_option(command: click.Command) -> click.Option:
        return next(p for p in command.params if isinstance(p, click.Option) and "--out" in p.opts)

    ctx = click.Context(adapters)
    for name in ("list", "promote", "clean"):
        option = out_option(adapters.get_command(ctx, name))
        assert option.help == out_option(train).help
        assert option.type.file_okay is False
