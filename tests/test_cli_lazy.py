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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "", f"spanrl --help imported {out.stdout.strip()}"


def test_short_help_lines_match_the_commands() -> None:
    """Every command is listed, and its line is the first paragraph of its own docstring."""
    ctx = click.Context(cli)
    assert set(SHORT_HELP) == set(COMMANDS) | {"ingest"}
    for name in SHORT_HELP:
        assert cli.get_command(ctx, name).get_short_help_str(1000) == SHORT_HELP[name], name


def test_ingest_imports_no_pyarrow(tmp_path) -> None:
    """`spanrl ingest` (stage 1, stage 2, a snapshot) reads and writes with DuckDB alone: pyarrow costs
    a small night 0.1-0.4 s of CPU and 40-100 MB of memory just to import (issue 28). numpy is left
    out of the check: DuckDB's create_function imports it (stage 1 registers otlp_any_json). Checked
    by sys.modules after a run that writes a snapshot, in a fresh interpreter. The night also holds a GenAI
    log event whose attributes are nested AnyValues, which go through the Python function otlp_any_json:
    as an Arrow function its result imported pyarrow and, through it, pandas (0.33 CPU s)."""
    import json

    from tests.ingest.otlp_lines import (
        T0,
        log_line,
        log_record,
        new_span_id,
        new_trace_id,
        span,
        trace_line,
        write_lines,
    )

    nested = [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
    tid, sid = new_trace_id(), new_span_id()
    write_lines(tmp_path / "otel" / "logs-2026-01-01T00-00-00.000.jsonl", [log_line([log_record(
        "gen_ai.client.inference.operation.details", None, tid, sid, T0,
        attrs={"gen_ai.input.messages": nested})])])
    lines = []
    for i in range(3):
        tid, root, chat = new_trace_id(), new_span_id(), new_span_id()
        lines.append(trace_line([
            span("invoke_agent a", tid, root, attrs={"gen_ai.agent.name": "a", "spanrl.reward": 1.0 * i}),
            span("chat m", tid, chat, parent=root, kind=3, attrs={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}],
                                                       "finish_reason": "stop"}])}),
        ]))
    write_lines(tmp_path / "otel" / "traces-2026-01-01T00-00-00.000.jsonl", lines)
    code = ("import sys; from spanrl.cli import cli\n"
            f"cli(['ingest', '--data', {str(tmp_path)!r}, '--settle', '0s'], standalone_mode=False)\n"
            "print('MODULES', ','.join(m for m in ('pyarrow', 'pandas') if m in sys.modules))\n"
            "import duckdb\n"  # the nested value was converted (by otlp_any_json) into plain JSON
            f"print(duckdb.sql(\"SELECT attributes->'gen_ai.input.messages' FROM '{tmp_path}/lake/logs/*/*.parquet'\")"
            ".fetchall()[0][0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "transitions" / "LATEST").is_file(), out.stdout + out.stderr
    modules, converted = out.stdout.strip().splitlines()[-2:]
    assert modules.strip() == "MODULES", f"spanrl ingest imported {modules}"
    assert json.loads(converted) == nested
