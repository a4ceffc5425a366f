"""Expected rows for every lake view (spans, logs, llm_calls, tool_calls, rewards, rollouts,
coverage): each ``tests/data/views/<view>/<case>.test`` file is fixture telemetry in, the real
loader, then queries through ``spanrl.query.connect`` and the rows they must return
(format: tests/helpers/view_tests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.ingest.load import load_lake
from spanrl.query import connect
from spanrl.query.sql import wants_stage2
from spanrl.transitions.build import open_lake
from spanrl.transitions.config import IngestConfig, make_ingest_config
from spanrl.transitions.rollouts import register_stage2
from tests.helpers.view_tests import parse_view_test, show_value, write_telemetry

VIEWS_DIR = Path(__file__).resolve().parents[1] / "data" / "views"
CASES = sorted(VIEWS_DIR.rglob("*.test"))
VIEWS = ("spans", "logs", "llm_calls", "tool_calls", "rewards", "rollouts", "coverage")


def test_every_view_has_expected_rows() -> None:
    have = {p.parent.name for p in CASES}
    assert set(VIEWS) <= have, f"no tests/data/views/<view>/*.test for {sorted(set(VIEWS) - have)}"


@pytest.mark.parametrize("path", CASES, ids=[str(p.relative_to(VIEWS_DIR).with_suffix("")) for p in CASES])
def test_view_rows(path: Path, tmp_path: Path) -> None:
    test = parse_view_test(path)
    ids = write_telemetry(test, tmp_path)
    summary = load_lake(IngestConfig(data=tmp_path, no_transitions=True, threads=2))
    assert summary.rejects == 0
    if any(wants_stage2(q.sql) for q in test.queries):
        # stage 2 as the snapshot builder creates it (the same SQL files, stage 1 materialised once):
        # as plain views over views, binding a rewards query takes ~20 s even on a tiny lake
        cfg = make_ingest_config(data=tmp_path, threads=2)
        con = open_lake(cfg)
        register_stage2(con, cfg, materialize=True)
    else:
        con = connect(tmp_path, stage2=False)
    for q in test.queries:
        rel = con.sql(q.sql)
        assert len(rel.columns) == q.columns, f"{path}:{q.line}: query has {len(rel.columns)} columns, not {q.columns}"
        got = ["\t".join(show_value(v, ids) for v in row) for row in rel.fetchall()]
        assert got == q.expected, (f"{path}:{q.line}: rows differ.\n--- expected\n" + "\n".join(q.expected)
                                   + "\n--- got\n" + "\n".join(got))
