"""The three places that decide whether the engine cut a reply at its token limit agree: the trainer's
text path (trainer/data.py CUT_REASONS), the exports (export/sql/macros.sql export_cut) and the ingest
summary's count (transitions/sql/summary/cut_replies.sql). A reason added to one and not the others
would train, export and report the same rows three ways."""

from __future__ import annotations

import duckdb

from spanrl.export.export import _SQL as EXPORT_SQL
from spanrl.trainer.data import CUT_REASONS
from spanrl.transitions.sqlfiles import read_sql

REASONS = ["length", "LENGTH", "max_tokens", "MAX_TOKENS", "max_output_tokens", "stop", "STOP", "end_turn",
           "tool_calls", "content_filter", "", None]


def test_export_summary_and_trainer_call_the_same_replies_cut() -> None:
    expected = [r is not None and r.lower() in CUT_REASONS for r in REASONS]
    assert any(expected) and not all(expected)
    con = duckdb.connect()
    macros = EXPORT_SQL.read("macros")  # the file also creates views over a snapshot: only the macro here
    start = macros.index("CREATE OR REPLACE MACRO export_cut")
    con.execute(macros[start:macros.index(";", start) + 1])
    exported = [con.execute("SELECT export_cut($r)", {"r": r}).fetchone()[0] for r in REASONS]
    assert exported == expected
    summary = read_sql("summary/cut_replies")
    for r, want in zip(REASONS, expected, strict=True):
        con.execute("CREATE OR REPLACE TEMP TABLE llm_calls AS SELECT $r::VARCHAR AS finish_reason", {"r": r})
        assert con.execute(summary).fetchone()[0] == int(want), r
