"""AIR rule predicates from spanrl.toml run on a connection that can read no host file (issue 9,
item 7), and the summary says which spanrl.toml was used."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines

PEEK = '''
[[air.rules]]
name = "peek"
when = "length((SELECT string_agg(content, '') FROM read_text('/etc/hostname'))) > 0"
value = -1.0
'''


@pytest.fixture()
def data(tmp_path) -> Path:
    d = tmp_path / "data"
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("chat m", new_trace_id(), new_span_id(), kind=3,
                                  attrs={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                         "spanrl.reward": 1.0})])])
    assert CliRunner().invoke(cli, ["ingest", "--data", str(d), "--no-transitions"]).exit_code == 0
    (d / "spanrl.toml").write_text(PEEK)
    return d


def test_a_rule_that_reads_a_host_file_is_refused_by_the_builder(data) -> None:
    res = CliRunner().invoke(cli, ["transitions", "build", "--data", str(data), "--settle", "0s"])
    assert res.exit_code == 2, res.output
    assert "AIR rule 'peek'" in res.output and "Permission" in res.output
    assert f"config: {(data / 'spanrl.toml').resolve()}" in res.output
    assert not (data / "transitions" / "LATEST").exists()


def test_a_rule_that_reads_a_host_file_is_refused_in_sql(data) -> None:
    res = CliRunner().invoke(cli, ["sql", "--data", str(data), "select count(*) from rewards"])
    assert res.exit_code == 2 and "AIR rule 'peek'" in res.output, res.output


def test_the_summary_names_a_config_file_found_in_the_current_directory(tmp_path, monkeypatch) -> None:
    d = tmp_path / "data"
    write_lines(d / "otel" / "traces-2026-01-01T00-00-00.000.jsonl",
                [trace_line([span("s", new_trace_id(), new_span_id())])])
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "spanrl.toml").write_text("[ingest]\nsettle_s = 0\n")
    monkeypatch.chdir(cwd)
    res = CliRunner().invoke(cli, ["ingest", "--data", str(d), "--no-transitions"])
    assert res.exit_code == 0, res.output
    assert f"config: {(cwd / 'spanrl.toml').resolve()} (found in the current directory)" in res.output
