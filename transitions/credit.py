"""Credit assignment and advantages (docs/transitions.md, "Credit and advantages").

Two steps: ``rollout_advantages.sql`` turns per-rollout scalars (task, reward) into one advantage
per rollout, ``apply_advantages.sql`` spreads it over the rollout's calls by the credit mode, whose
rule is its own file ``sql/credit/<mode>.sql`` (``credit_modes`` lists them; a mode's ``$parameters``
are bound by name from the stage-2 config). A snapshot stores the first step's output in a small
table and its readers run the second (``snapshot.py``), so a night's new rollouts change that table, never an old row.
``compute_advantages`` runs both over any snapshot table, so advantages can be recomputed (another
``--advantage``, or task statistics reduced across shards) without rebuilding. The pure functions below state the
maths one rollout at a time; the tests check the SQL against them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa

from spanrl.config import default_of
from spanrl.errors import InputError
from spanrl.sqlfiles import HEADER, SqlFiles, one, sql_literal
from spanrl.transitions.sqlfiles import read_sql

EPS = 1e-6  # added to the std, as in GRPO: (R - mean) / (std + eps)
_ZERO_STD = 1e-12  # below this a group has no spread: its advantage is 0


def rollout_advantages(
    rewards: Mapping[str, float], tasks: Mapping[str, str | None], mode: str = "group", eps: float = EPS
) -> dict[str, float]:
    """One advantage per rollout. group: normalised over the rollouts of the same task (a task seen
    once falls back to the batch); batch: over all rollouts; none: the reward itself."""
    if mode == "none":
        return dict(rewards)
    batch = _norm(list(rewards.values()), eps)
    by_task: dict[str | None, list[str]] = {}
    for rid in rewards:
        by_task.setdefault(tasks.get(rid), []).append(rid)
    out = {}
    for task, rids in by_task.items():
        if mode == "group" and task is not None and len(rids) > 1:
            norm = _norm([rewards[r] for r in rids], eps)
        else:
            norm = batch
        for rid in rids:
            out[rid] = norm(rewards[rid])
    return out


def _norm(values: Sequence[float], eps: float):
    n = len(values)
    mean = sum(values) / n if n else 0.0
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    if std < _ZERO_STD:
        return lambda _v: 0.0
    return lambda v: (v - mean) / (std + eps)


def air_rollout_advantages(
    rewards: Mapping[str, float], step_rewards: Mapping[str, Sequence[float]], tasks: Mapping[str, str | None],
    mode: str = "group", eps: float = EPS,
) -> dict[str, tuple[float, float, float]]:
    """AIR in the group statistics, per rollout: (a_air, air_scale, s_mean). The shaped reward
    R = r + s (s: the sum of its calls' AIR rewards) goes through the same baseline as the outcome
    (``rollout_advantages``); air_scale is the divisor that baseline used (1 for none or no spread)."""
    shaped = {rid: rewards[rid] + sum(step_rewards[rid]) for rid in rewards}
    a_air = rollout_advantages(shaped, tasks, mode, eps)
    out = {}
    for rid in rewards:
        if mode == "none":
            scale = 1.0
        else:
            task = tasks.get(rid)
            peers = [r for r in shaped if mode == "group" and task is not None and tasks.get(r) == task]
            values = [shaped[r] for r in (peers if len(peers) > 1 else shaped)]
            std = _std(values)
            scale = 1.0 if std < _ZERO_STD else std + eps
        n = max(len(step_rewards[rid]), 1)
        out[rid] = (a_air[rid], scale, sum(step_rewards[rid]) / n)
    return out


def _std(values: Sequence[float]) -> float:
    n = len(values)
    mean = sum(values) / n if n else 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0


def air_step_advantages(a_air: float, scale: float, step_rewards: Sequence[float]) -> list[float]:
    """Credit ``air``: the rollout's AIR-shaped group advantage, moved per call by how far the call's
    own AIR reward sits from the rollout's mean, in the group's units: a_air + (r_t - mean r) / scale.
    The calls' mean is a_air; the call that broke a tool is below its siblings."""
    mean = sum(step_rewards) / max(len(step_rewards), 1)
    return [a_air + (r - mean) / scale for r in step_rewards]


def step_credit(value: float, step_rewards: Sequence[float], credit: str, gamma: float) -> list[float]:
    """Spread a rollout-level value (its return R or, except for ``air``, its advantage A) over its T calls.

    identical: every call gets ``value``; last: only the last call; air: every call gets ``value``
    plus the AIR reward r_t of the rules it set off itself (``value + r_t``: the return; the air
    advantage is ``air_step_advantages``); discounted: gamma^(T-1-t) * value plus the AIR
    reward-to-go sum_{k>=t} gamma^(k-t) * r_k.
    """
    n = len(step_rewards)
    if credit == "identical":
        return [value] * n
    if credit == "air":
        return [value + r for r in step_rewards]
    if credit == "last":
        return [0.0] * (n - 1) + [value] if n else []
    out, to_go = [0.0] * n, 0.0
    for t in range(n - 1, -1, -1):
        to_go = step_rewards[t] + gamma * to_go
        out[t] = gamma ** (n - 1 - t) * value + to_go
    return out


def compute_advantages(
    table: pa.Table, credit: str = "identical", gamma: float = 0.95, advantage: str = "group", eps: float = EPS,
    **knobs: Any,
) -> pa.Table:
    """Fill ``return`` and ``advantage`` of transition rows (a snapshot table or the builder's rows).
    ``knobs``: the stage-2 config values a credit mode's SQL declares beyond ``gamma`` (by name)."""
    con = duckdb.connect()
    try:
        con.register("transition_rows", table)
        return run_advantages(con, credit, gamma, advantage, eps, **knobs)
    finally:
        con.close()


def run_advantages(
    con: duckdb.DuckDBPyConnection, credit: str, gamma: float, advantage: str, eps: float = EPS, **knobs: Any
) -> pa.Table:
    """Both steps over the relation ``transition_rows`` on ``con``, in (rollout_id, step) order: the
    snapshot's steps (``pipeline.DIGEST_STEPS`` as views, where only task and reward are read, then
    ``SNAPSHOT_STEPS``), then the credit mode."""
    from spanrl.transitions.pipeline import DIGEST_STEPS, SNAPSHOT_STEPS, run_steps

    run_steps(con, DIGEST_STEPS, materialize=False)
    run_steps(con, SNAPSHOT_STEPS, materialize=True, params=advantage_params(advantage, eps))
    return apply_advantages(con, {"credit": credit, "gamma": gamma, **knobs})


# advantages.parquet columns since AIR joined the group statistics; a table written before has only
# the first five, and its readers fill the rest with NULL (apply_advantages.sql then keeps the old air rule)
ADVANTAGE_COLUMNS = ("rollout_id", "task_id", "r", "a_r", "baseline", "s", "s_mean", "a_air", "air_scale")
AIR_COLUMNS = {"s": "DOUBLE", "s_mean": "DOUBLE", "a_air": "DOUBLE", "air_scale": "DOUBLE"}


def with_air_columns(relation: str, names: Sequence[str]) -> str:
    """SELECT over an advantages relation with the AIR columns it lacks as NULL (older snapshots)."""
    missing = [f"NULL::{t} AS {c}" for c, t in AIR_COLUMNS.items() if c not in names]
    return f"SELECT *{', ' if missing else ''}{', '.join(missing)} FROM {relation}"


def advantage_params(advantage: str, eps: float = EPS) -> dict[str, dict[str, Any]]:
    """``run_steps``' ``params`` for ``SNAPSHOT_STEPS``: the baseline and eps ``_rollout_adv``
    (``snapshot/rollout_advantages.sql``, ``ADVANTAGE_COLUMNS``) binds."""
    return {"_rollout_adv": {"advantage": advantage, "eps": eps}}


# The credit modes: one statement each in sql/credit/<mode>.sql, found by file name, so a new mode is a
# new file (plus a config field when it declares a new parameter). A test points this at another package.
_MODES = SqlFiles("spanrl.transitions")
# What readers have always taken for a manifest without a credit key (every schema-v2 manifest has one).
_UNRECORDED_CREDIT = "air"


def credit_modes() -> tuple[str, ...]:
    """The credit modes this release knows, sorted: the files of ``sql/credit/`` (the ``--credit``
    choices and the values a manifest may name)."""
    folder = resources.files(_MODES.package).joinpath("sql", "credit")
    return tuple(sorted(f.name[:-4] for f in folder.iterdir() if f.name.endswith(".sql")))


def credit_sql(credit: str, snapshot: str | Path | None = None, ordered: bool = True) -> str:
    """The apply step for one credit mode: its ``sql/credit/<mode>.sql`` as the relation ``credit_rows``
    of ``snapshot/apply_advantages.sql`` (``ordered=False``: without its sort, for the builder, whose
    segment writer sorts). A mode this release does not know is an ``InputError`` naming ``snapshot``
    (when given) and the modes there are, never another mode's rule."""
    tail = read_sql("snapshot/apply_advantages") if ordered else "SELECT * FROM credit_rows"
    return f"WITH credit_rows AS (\n{_mode_file(credit, snapshot)}\n)\n{tail}"


def _mode_file(credit: str, snapshot: str | Path | None = None) -> str:
    """The text of ``sql/credit/<credit>.sql``, or the ``InputError`` for a mode there is no file of."""
    modes = credit_modes()
    if credit not in modes:
        where = f"snapshot {snapshot}: " if snapshot is not None else ""
        raise InputError(
            f"{where}credit mode {credit!r} is not one this spanrl knows ({', '.join(modes)}); read it with the "
            "spanrl release that wrote it, or rebuild with `spanrl transitions build --rebuild --credit MODE`"
        )
    return _MODES.read(f"credit/{credit}")


def credit_params(config: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The parameters the config's credit mode declares (``-- name: discounted($gamma)``), each bound
    by name from the stage-2 config: a ``BuildConfig`` (or any object with those attributes) or a
    manifest's ``config`` mapping, where a key the manifest does not record takes the field's default."""
    header = HEADER.match(_mode_file(_credit_of(config)).splitlines()[0])
    names = [p.strip().lstrip("$") for p in (header["params"] or "").split(",") if p.strip()] if header else []
    return {name: _config_value(config, name) for name in names}


def _credit_of(config: Mapping[str, Any] | Any) -> str:
    if isinstance(config, Mapping):
        return config.get("credit", _UNRECORDED_CREDIT)
    return config.credit


def _config_value(config: Mapping[str, Any] | Any, name: str) -> Any:
    if not isinstance(config, Mapping):
        return getattr(config, name)
    if name in config:
        return config[name]
    from spanrl.transitions.config import BuildConfig  # only for a knob newer than the manifest

    return default_of(BuildConfig, name)


def apply_advantages(
    con: duckdb.DuckDBPyConnection, config: Mapping[str, Any] | Any, snapshot: str | Path | None = None
) -> pa.Table:
    """``transition_rows`` with return and advantage from ``_rollout_adv`` by the config's credit mode
    (``config``: a stage-2 config or a manifest's ``config``), in (rollout_id, step) order."""
    return con.sql(credit_sql(_credit_of(config), snapshot), params=credit_params(config)).to_arrow_table()


def credit_view_sql(config: Mapping[str, Any] | Any, rows: str, adv: str, snapshot: str | Path | None = None,
                    ordered: bool = True) -> str:
    """``apply_advantages`` as one SELECT over the relations ``rows`` and ``adv`` with the mode's
    parameters written in as literals: the body of a lazy view (a view cannot hold parameters)."""
    sql = credit_sql(_credit_of(config), snapshot, ordered)
    sql = re.sub(r"\btransition_rows\b", lambda _: rows, re.sub(r"\b_rollout_adv\b", lambda _: adv, sql))
    for name, value in credit_params(config).items():
        sql = re.sub(rf"\${name}\b", lambda _, v=value: _literal(v), sql)
    return sql


def builder_transitions_sql(cfg: Any) -> str:
    """The builder's ``transitions`` (TRANSITION_STEPS): its new rows with their returns, advantage unset
    (the snapshot reader's: it moves with every night), unordered. A view over ``_transition_base``: its
    two readers (the digests, the segment writer, which sorts) each join the rows to ``_rollout_frame``
    (the new rows' per-rollout frame, in the place of the mode's ``_rollout_adv``) instead of a table
    holding every prompt once more."""
    return ("SELECT * REPLACE (NULL::DOUBLE AS advantage) FROM ("
            + credit_view_sql(cfg, "_transition_base", "_rollout_frame", ordered=False) + ")")


def _literal(value: Any) -> str:
    """A config value as SQL text: a number as Python writes it (``0.95``), a string quoted."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return sql_literal(str(value))


def advantage_stats(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Group bookkeeping over ``_rollout_rewards`` (rollout_id, task_id, r): tasks with one rollout,
    zero-variance groups."""
    row = one(con, read_sql("advantages/advantage_stats"))
    return {"groups": row["groups"], "zero_variance_groups": row["zero_variance_groups"],
            "batch_fallback_rollouts": int(row["batch_fallback_rollouts"])}
