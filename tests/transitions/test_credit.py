"""Credit assignment and advantages: hand-computed cases, SQL == pure maths, and properties."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanrl.errors import InputError
from spanrl.sqlfiles import SqlFiles
from spanrl.transitions import credit
from spanrl.transitions.credit import (
    air_rollout_advantages,
    air_step_advantages,
    compute_advantages,
    credit_modes,
    credit_params,
    rollout_advantages,
    run_advantages,
    step_credit,
)
from spanrl.transitions.schema import TRANSITION_SCHEMA
from spanrl.transitions.snapshot import open_snapshot, read_snapshot, register_snapshot
from spanrl.transitions.sqlfiles import read_sql

_KNOWN = credit_modes()


def _rows(rollouts: list[tuple[str, str | None, float | None, list[float]]]) -> pa.Table:
    """(rollout_id, task_id, final_reward, step_rewards per call) -> transition rows."""
    cols: dict[str, list] = {name: [] for name in TRANSITION_SCHEMA.names}
    for rid, task, reward, steps in rollouts:
        for t, r in enumerate(steps):
            row = {name: None for name in TRANSITION_SCHEMA.names}
            row.update(snapshot_id="s", rollout_id=rid, task_id=task, step=t, n_steps=len(steps),
                       final_reward=reward, step_reward=r, is_last=t == len(steps) - 1, token_source="text")
            for k, v in row.items():
                cols[k].append(v)
    return pa.table(cols, schema=TRANSITION_SCHEMA)


def test_group_advantage_by_hand_and_singleton_falls_back_to_batch() -> None:
    table = _rows([("a1", "A", 1.0, [0, 0]), ("a2", "A", 0.0, [0]), ("a3", "A", 1.0, [0]), ("a4", "A", 0.0, [0]),
                   ("b1", "B", 1.0, [0])])
    out = compute_advantages(table, advantage="group").to_pylist()
    adv = {(r["rollout_id"], r["step"]): r["advantage"] for r in out}
    sd = math.sqrt(1 / 3)  # sample std of [1, 0, 1, 0]
    assert adv[("a1", 0)] == adv[("a1", 1)] == pytest.approx(0.5 / (sd + 1e-6))  # one value per rollout
    assert adv[("a2", 0)] == pytest.approx(-0.5 / (sd + 1e-6))
    batch = [1, 0, 1, 0, 1]
    mean, bsd = sum(batch) / 5, math.sqrt(sum((x - 0.6) ** 2 for x in batch) / 4)
    assert adv[("b1", 0)] == pytest.approx((1 - mean) / (bsd + 1e-6))
    assert all(r["return"] == r["final_reward"] for r in out)


def test_zero_variance_group_gets_zero() -> None:
    out = compute_advantages(_rows([("x", "T", 1.0, [0]), ("y", "T", 1.0, [0, 0])])).to_pylist()
    assert [r["advantage"] for r in out] == [0.0, 0.0, 0.0]


def test_last_credit_only_on_final_call() -> None:
    out = compute_advantages(_rows([("x", None, 2.0, [0, 0, 0])]), credit="last", advantage="none").to_pylist()
    assert [(r["return"], r["advantage"]) for r in out] == [(0.0, 0.0), (0.0, 0.0), (2.0, 2.0)]


def test_step_credit_discounted_by_hand() -> None:
    assert step_credit(1.0, [0.0, -0.5, 0.0], "discounted", 0.5) == pytest.approx([0.25 - 0.25, 0.5 - 0.5, 1.0])


def test_air_credit_by_hand_puts_air_into_the_group_statistics() -> None:
    """Task T, two rollouts: x (r=1, its 2nd of 3 calls sent bad arguments: AIR -0.5) and y (r=0).
    Shaped rewards R = r + s: x 0.5, y 0; mean 0.25, sample std 0.3536, so a_air(x) = +0.7071 and
    a_air(y) = -0.7071 (docs/transitions.md has this example). Within x, each call moves by its own AIR
    reward minus x's mean AIR (-0.5/3), in the group's units (/ 0.3536): the call that broke the tool
    is pushed down, its siblings up; x's mean advantage stays a_air(x). The return is r + r_t."""
    table = _rows([("x", "T", 1.0, [0.0, -0.5, 0.0]), ("y", "T", 0.0, [0.0, 0.0])])
    out = compute_advantages(table, credit="air", advantage="group").to_pylist()
    sd = math.sqrt(0.125)
    a, scale, mean = 0.25 / (sd + 1e-6), sd + 1e-6, -0.5 / 3
    assert [r["return"] for r in out] == pytest.approx([1.0, 0.5, 1.0, 0.0, 0.0])
    assert [r["advantage"] for r in out] == pytest.approx(
        [a - mean / scale, a + (-0.5 - mean) / scale, a - mean / scale, -a, -a])
    assert sum(r["advantage"] for r in out[:3]) / 3 == pytest.approx(a)
    same = compute_advantages(table, credit="identical", advantage="group").to_pylist()
    a_r = 0.5 / (math.sqrt(0.5) + 1e-6)
    assert [r["advantage"] for r in same] == pytest.approx([a_r, a_r, a_r, -a_r, -a_r])  # identical ignores AIR


def test_air_credit_gives_a_signal_where_the_outcome_has_none() -> None:
    """Every rollout of the task failed (the outcome has no spread): AIR alone ranks them, in unit
    scale (x broke a tool, y did not), and inside x the breaking call is the lowest."""
    out = compute_advantages(_rows([("x", "T", 0.0, [-0.2, 0.0]), ("y", "T", 0.0, [0.0, 0.0])]), credit="air")
    sd = math.sqrt(0.02)  # sample std of [-0.2, 0]
    a, scale = 0.1 / (sd + 1e-6), sd + 1e-6
    assert out["advantage"].to_pylist() == pytest.approx([-a - 0.1 / scale, -a + 0.1 / scale, a, a])
    assert out["advantage"].to_pylist()[0] < min(out["advantage"].to_pylist()[1:])


def test_air_without_any_hit_is_identical_credit() -> None:
    table = _rows([("x", "T", 1.0, [0.0, 0.0]), ("y", "T", 0.0, [0.0]), ("z", None, 0.5, [0.0])])
    for mode in ("group", "batch", "none"):
        air = compute_advantages(table, credit="air", advantage=mode)["advantage"].to_pylist()
        same = compute_advantages(table, credit="identical", advantage=mode)["advantage"].to_pylist()
        assert air == pytest.approx(same, abs=1e-12), mode


def test_default_credit_is_identical() -> None:
    """The default follows the 3-seed ablation (docs/demo.md): identical credit learned most; `air`,
    with AIR raw or in the group statistics, learned least."""
    from spanrl.transitions.config import CREDIT_CHOICES, IngestConfig

    assert IngestConfig().credit == "identical" and set(CREDIT_CHOICES) >= {"identical", "discounted", "last", "air"}


def test_the_credit_modes_are_the_sql_files_and_the_config_offers_them() -> None:
    """One file per mode in sql/credit/; ``--credit`` and the TOML value accept exactly those."""
    from spanrl.config import choices_of
    from spanrl.transitions.config import BuildConfig

    folder = Path(credit.__file__).parent / "sql" / "credit"
    assert credit_modes() == tuple(sorted(p.stem for p in folder.glob("*.sql")))
    assert {"identical", "air", "discounted", "last"} <= set(credit_modes())
    assert set(choices_of(BuildConfig, "credit")) == set(credit_modes())


@pytest.mark.parametrize("mode", credit_modes())
def test_every_credit_mode_keeps_the_rows_and_their_columns(mode: str) -> None:
    """A mode replaces return and advantage only: same rows, same columns in their places, (rollout_id,
    step) order, a value for every call (what the snapshot hash, trainer batches and exports rely on)."""
    table = _rows([("b", "T", 1.0, [0.0, -0.5, 0.0]), ("a", "T", 0.0, [0.0, 0.0]), ("c", None, None, [0.1])])
    out = compute_advantages(table, credit=mode, advantage="batch")
    assert out.column_names == table.column_names
    assert out["return"].type == out["advantage"].type == pa.float64()
    assert [(r["rollout_id"], r["step"]) for r in out.to_pylist()] == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2),
                                                                       ("c", 0)]
    assert out["return"].null_count == out["advantage"].null_count == 0
    unchanged = [c for c in table.column_names if c not in ("return", "advantage")]
    assert out.select(unchanged).sort_by([("rollout_id", "ascending"), ("step", "ascending")]).to_pylist() == \
        table.select(unchanged).sort_by([("rollout_id", "ascending"), ("step", "ascending")]).to_pylist()


def test_a_mode_binds_its_declared_parameters_by_name() -> None:
    """discounted declares $gamma: it is taken from the config; a manifest without it gets the default."""
    from spanrl.config import default_of
    from spanrl.transitions.config import BuildConfig

    assert credit_params({"credit": "discounted", "gamma": 0.5, "advantage": "group"}) == {"gamma": 0.5}
    assert credit_params({"credit": "discounted"}) == {"gamma": default_of(BuildConfig, "gamma")}
    assert credit_params({"credit": "identical", "gamma": 0.5}) == {}
    assert credit_params(BuildConfig(credit="discounted", gamma=0.7)) == {"gamma": 0.7}


def test_a_new_mode_file_is_picked_up_without_any_python_change(tmp_path: Path, monkeypatch) -> None:
    """A stage package whose sql/credit/ holds today's files plus one more: the new mode is listed,
    runs, and gets its new parameter by name (here from compute_advantages' knobs)."""
    pkg = tmp_path / "credit_stage"
    (pkg / "sql" / "credit").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for mode in credit_modes():
        (pkg / "sql" / "credit" / f"{mode}.sql").write_text((Path(credit.__file__).parent / "sql" / "credit"
                                                            / f"{mode}.sql").read_text())
    (pkg / "sql" / "credit" / "bonus.sql").write_text(
        "-- name: bonus($gamma, $bonus)\n-- Test mode: the rollout's values times gamma, plus a flat bonus.\n"
        'SELECT tr.* REPLACE (adv.r * $gamma + $bonus AS "return", adv.a_r * $gamma + $bonus AS advantage)\n'
        "FROM transition_rows tr JOIN _rollout_adv adv USING (rollout_id)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(credit, "_MODES", SqlFiles("credit_stage"))
    try:
        assert credit_modes() == tuple(sorted((*_KNOWN, "bonus")))
        table = _rows([("x", "T", 1.0, [0.0, 0.0]), ("y", "T", 0.0, [0.0])])
        same = compute_advantages(table, credit="identical")
        out = compute_advantages(table, credit="bonus", gamma=0.5, bonus=2.0)
        assert out["return"].to_pylist() == pytest.approx([r * 0.5 + 2.0 for r in same["return"].to_pylist()])
        assert out["advantage"].to_pylist() == pytest.approx([a * 0.5 + 2.0 for a in same["advantage"].to_pylist()])
    finally:
        sys.modules.pop("credit_stage", None)


def _snapshot_with_advantages(data: Path, credit_mode: str) -> Path:
    """A snapshot as the builder leaves it: parts with NULL advantages plus advantages.parquet."""
    table = _rows([("x", "T", 1.0, [0.0, -0.5]), ("y", "T", 0.0, [0.0])])
    con = duckdb.connect()
    try:
        con.register("transition_rows", table)
        run_advantages(con, credit_mode, 0.9, "group")
        with open_snapshot(data) as draft:
            draft.write_part(table)
            draft.write_index(con, read_sql("snapshot/rollout_digests"), "SELECT * FROM _rollout_adv")
            return draft.commit({"credit": credit_mode, "gamma": 0.9}, [])
    finally:
        con.close()


def test_a_snapshot_of_an_unknown_credit_mode_is_refused_by_name(tmp_path: Path) -> None:
    """A manifest naming a mode this release lacks (a newer spanrl wrote it, or an edit): every reader
    says which snapshot, which mode and the modes there are, instead of applying another rule."""
    folder = _snapshot_with_advantages(tmp_path, "air")
    table, _ = read_snapshot(tmp_path)
    assert table["advantage"].null_count == 0  # the fixture is readable as written
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["config"]["credit"] = "bogus"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    expected = rf"{re.escape(str(folder))}.*'bogus'.*{', '.join(credit_modes())}"
    with pytest.raises(InputError, match=expected):
        read_snapshot(tmp_path)
    con = duckdb.connect()
    try:
        with pytest.raises(InputError, match=expected):
            register_snapshot(con, tmp_path, "LATEST", "snap")
    finally:
        con.close()
    with pytest.raises(InputError, match=r"credit mode 'bogus'"):
        compute_advantages(table, credit="bogus")


rollout_st = st.tuples(
    st.sampled_from(["A", "B", "C", None]),
    st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0]), st.floats(-3, 3, allow_nan=False)),
    st.lists(st.sampled_from([0.0, 0.0, -0.2, -0.5, 0.1]), min_size=1, max_size=6),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rollout_st, min_size=1, max_size=8), st.sampled_from(["identical", "discounted", "last", "air"]),
       st.sampled_from(["group", "batch", "none"]), st.sampled_from([0.5, 0.9, 1.0]))
def test_sql_matches_pure_maths(rollouts, credit, advantage, gamma) -> None:
    spec = [(f"r{i}", task, reward, steps) for i, (task, reward, steps) in enumerate(rollouts)]
    out = compute_advantages(_rows(spec), credit=credit, gamma=gamma, advantage=advantage).to_pylist()
    rewards = {rid: (reward or 0.0) for rid, _, reward, _ in spec}
    tasks = {rid: task for rid, task, _, _ in spec}
    a_r = rollout_advantages(rewards, tasks, advantage)
    air = air_rollout_advantages(rewards, {rid: steps for rid, _, _, steps in spec}, tasks, advantage)
    by_rollout: dict[str, list[dict]] = {}
    for row in out:
        by_rollout.setdefault(row["rollout_id"], []).append(row)
    for rid, _task, _reward, steps in spec:
        rows = by_rollout[rid]
        assert [r["step"] for r in rows] == list(range(len(steps)))
        assert [r["return"] for r in rows] == pytest.approx(step_credit(rewards[rid], steps, credit, gamma), abs=1e-9)
        expected = (air_step_advantages(air[rid][0], air[rid][1], steps) if credit == "air"
                    else step_credit(a_r[rid], steps, credit, gamma))
        assert [r["advantage"] for r in rows] == pytest.approx(expected, abs=1e-6)
        if credit == "identical":
            assert all(r["return"] == rewards[rid] for r in rows)
        if credit == "air":  # the rollout's return plus this call's own AIR reward, nothing else
            assert [r["return"] - rewards[rid] for r in rows] == pytest.approx(steps, abs=1e-9)
            if not any(x for _, _, _, xs in spec for x in xs):  # no AIR hit anywhere: identical credit
                assert [r["advantage"] for r in rows] == pytest.approx([a_r[rid]] * len(steps), abs=1e-9)
    if advantage == "group" and credit == "identical":
        per_task: dict[str, list[float]] = {}
        for rid, task, _, _ in spec:
            per_task.setdefault(task, []).append(by_rollout[rid][0]["advantage"])
        for task, advs in per_task.items():
            if task is not None and len(advs) > 1:
                assert abs(sum(advs)) < 1e-6 * len(advs) + 1e-9


def test_advantages_are_bit_identical_whatever_the_thread_schedule() -> None:
    """The snapshot's content hash decides "unchanged"; a float sum whose order depends on thread
    scheduling made the same lake give a new snapshot now and then (seen in CI)."""
    import random

    rng = random.Random(3)
    spec = [(f"r{i:05d}", f"t{i % 7}", rng.uniform(-5, 5), [rng.choice([0.0, -0.2, 0.1]) for _ in range(3)])
            for i in range(20_000)]
    table = _rows(spec)
    con = duckdb.connect()
    con.execute("SET threads = 8")
    con.register("transition_rows", table)
    runs = {tuple(run_advantages(con, "discounted", 0.9, advantage, 1e-6).column("advantage").to_pylist())
            for advantage in ("group", "batch") for _ in range(4)}
    assert len(runs) == 2  # one result per advantage mode, identical across the 4 runs


def test_a_credit_view_gives_the_returns_bound_parameters_give() -> None:
    """The builder's transitions view (credit.builder_transitions_sql) and the snapshot reader's lazy view
    write the mode's parameters into the SQL as literals (a view holds none): the returns must be the
    ones bound parameters give, whatever gamma's digits (a literal 0.95 is a DECIMAL in DuckDB; its
    conversion to DOUBLE is exact for every float repr tried), or the stored rows would depend on the path."""
    import math

    from spanrl.transitions.credit import credit_params, credit_sql, credit_view_sql

    con = duckdb.connect()
    con.execute("CREATE TABLE transition_rows AS SELECT 'r' AS rollout_id, 'T' AS task_id, s::INTEGER AS step, "
                "6 AS n_steps, 1.0::DOUBLE AS final_reward, (s % 2)::DOUBLE * 0.3 AS step_reward, "
                "NULL::DOUBLE AS \"return\", NULL::DOUBLE AS advantage FROM range(6) t(s)")
    con.execute("CREATE TABLE _rollout_adv AS SELECT 'r' AS rollout_id, 0.7::DOUBLE AS r, 0.3::DOUBLE AS a_r")
    for gamma in (0.95, 0.1234567890123456789, 1 / 3):
        config = {"credit": "discounted", "gamma": gamma}
        bound = con.execute(credit_sql("discounted"), credit_params(config)).fetchall()
        viewed = con.execute(credit_view_sql(config, "transition_rows", "_rollout_adv")).fetchall()
        assert viewed == bound and not any(isinstance(v, float) and math.isnan(v) for row in bound for v in row)
