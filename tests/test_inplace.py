"""``spanrl sql --data s3://...`` reads the lake where it lies (issue 47), on moto's real S3 server: over a
root of ten nights (ten ``spanrl ingest`` runs), a query over one recent night fetches a small part of the
root (the bytes are printed) and answers as the same query over a local copy of the root does."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.nights import ARGS, night_date, write_night
from tests.helpers.s3 import new_bucket, s3_server

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")

NIGHTS = 10
FETCHED = re.compile(r"spanrl: fetched (\S+ [KM]B) of (\S+ [KM]B) \(([\d.]+) %\) from (s3://\S+)")


@pytest.fixture(scope="module")
def s3_env():
    with s3_server() as env:
        yield env


@pytest.fixture(scope="module")
def ten_nights(s3_env, tmp_path_factory) -> tuple[str, Path]:
    """A root of ten nights, each ingested by its own run (ten states, ten date partitions, ten segments),
    and a local copy of it (the full reader mirror, as `spanrl sql` made before)."""
    tmp = tmp_path_factory.mktemp("nights")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in s3_env.items():
            mp.setenv(k, v)
        mp.setenv("SPANRL_CACHE", str(tmp / "cache"))
        root = f"s3://{new_bucket(s3_env)}/root"
        for night in range(NIGHTS):
            write_night(tmp / "otel", night, rollouts=60, text=1024)  # ~0.4 MB per table and night
            res = CliRunner().invoke(cli, ["ingest", "--data", root, "--input", str(tmp / "otel"), *ARGS])
            assert res.exit_code == 0, res.output
        from spanrl.remote import remote_root

        with remote_root(root, write=False, command="copy") as mirror:
            shutil.copytree(mirror, tmp / "local")
    return root, tmp / "local"


@pytest.fixture
def env(s3_env, monkeypatch, tmp_path) -> None:
    for k, v in s3_env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SPANRL_CACHE", str(tmp_path / "cache"))  # a machine that never read the root


def _sql(data: str, query: str) -> tuple[list[dict], str]:
    res = CliRunner().invoke(cli, ["sql", "--data", data, "--format", "json", query])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")], res.stderr


@pytest.mark.timeout(600)
@pytest.mark.parametrize("query", [
    f"select count(*) AS spans, count(DISTINCT trace_id) AS traces, min(name) AS first, max(end_ns) AS last, "
    f"sum(length(CAST(attributes AS VARCHAR))) AS text from spans where date = '{night_date(NIGHTS - 1)}'",
    f"select name, count(*) AS n from spans where date >= '{night_date(NIGHTS - 1)}' group by 1 order by 1",
])
def test_sql_over_one_night_fetches_a_small_part_of_the_root(ten_nights, env, query: str) -> None:
    root, local = ten_nights
    rows, err = _sql(root, query)
    assert rows and rows == _sql(str(local), query)[0]
    match = FETCHED.search(err)
    print(err.strip())  # the numbers docs/scale.md quotes (pytest -s)
    assert match and match.group(4) == root, err
    assert float(match.group(3)) < 20, err  # the printed share of the root's bytes
    again, err = _sql(root, query)  # a second run: the small files and the footers are there
    print(err.strip())
    assert again == rows and float(FETCHED.search(err).group(3)) < float(match.group(3)) / 2, err


@pytest.mark.timeout(600)
@pytest.mark.parametrize("query", [
    "select count(*) AS n, count(DISTINCT trace_id) AS traces from llm_calls",
    "select task_id, count(*) AS n, avg(final_reward) AS reward from rollouts group by 1 order by 1",
    "select count(*) AS n, min(date) AS first from spans",
    "select count(*) AS n from span_files",
])
def test_tables_that_are_not_partitioned_answer_as_a_local_copy(ten_nights, env, query: str) -> None:
    """Stage-2 segments, the whole lake and the lake's file record, read in place: the same rows."""
    root, local = ten_nights
    rows, err = _sql(root, query)
    assert rows and rows == _sql(str(local), query)[0], err
    assert FETCHED.search(err), err


def test_what_is_read_in_place() -> None:
    """Parquet files are read where they lie, but for feedback files (stage 2's loader reads them whole)."""
    from spanrl.inplace import in_place

    assert in_place("lake/spans/date=2026-01-01/part-1.parquet") and in_place("transitions/_tables/b/s/llm_calls.parquet")
    assert not in_place("feedback/scores.parquet") and not in_place("transitions/_tables/b/state.json")
