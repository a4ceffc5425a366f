"""The data root's layout, and the few reads that several stages need of one another's files.

Every file kind on disk has one owner module (docs/architecture.md, "One owner per artefact";
``tests/test_ownership.py`` fails when another module names it). Some answers are needed across
the import rules (``tests/test_layout.py``): the snapshot cleanup must keep every snapshot a
training run or the demo used, but transitions may not import the trainer or the demo; rollout
starts the server on LATEST's adapter, but may not import the trainer; the web app stamps files of
four stages to see that new data landed. Those reads live here, in the root package every stage
may import, beside the names of the data root's folders, so no stage opens another's files by path.
Everything here only reads, and never fails on a missing or torn file: a draft half written, a
data root that has not seen a training run yet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanrl.config import CONFIG_NAME as CONFIG_FILE  # the data root's optional config
from spanrl.publish import POINTER, read_pointer

# the data root's folders (docs/architecture.md, "The data root")
LAKE = "lake"
TRANSITIONS = "transitions"
TABLES = "_tables"  # under transitions/: the stage-2 segments (transitions/tables.py)
ADAPTERS = "adapters"
FEEDBACK = "feedback"
OTEL = "otel"
DEMO = "demo"
MLRUNS = "mlruns"  # spanrl train/eval --report-to mlflow: the local MLflow file store (trainer/tracking.py)
TENSORBOARD = "tensorboard"  # --report-to tensorboard: event files, one folder per run (trainer/tracking.py)
MANAGED_FOLDERS = (LAKE, TRANSITIONS, ADAPTERS, OTEL)  # what spanrl itself writes; never an output path

# the files of other stages read here (each written by its owner only)
FILE_STATE = "_files.parquet"  # lake/: which span files were ingested (ingest/scan.py)
TRAINING_STATE = "training_state.json"  # adapters/<id>/: the resolved config, parent, snapshot (trainer/adapter.py)
ADAPTER_CONFIG = "adapter_config.json"  # adapters/<id>/: PEFT's own, what makes a folder an adapter
CYCLE_LOG = "cycles.jsonl"  # adapters/ (trainer/adapter.py) and demo/ (demo/loop.py): one line per finished cycle


def lake_dir(data: Path | str) -> Path:
    return Path(data) / LAKE


def otel_dir(data: Path | str) -> Path:
    """Where the collector writes span files (``otel/traces*.jsonl``, ``otel/logs*.jsonl``)."""
    return Path(data) / OTEL


def transitions_dir(data: Path | str) -> Path:
    """Where snapshots live (``transitions/<id>/`` + ``transitions/LATEST``)."""
    return Path(data) / TRANSITIONS


def tables_dir(data: Path | str) -> Path:
    """Where the stage-2 builds live (``transitions/_tables/<build>/`` + ``_tables/LATEST``)."""
    return transitions_dir(data) / TABLES


def adapters_dir(data: Path | str) -> Path:
    """Where ``spanrl train`` writes adapters by default (``--out`` overrides)."""
    return Path(data) / ADAPTERS


AGENT_ADAPTERS = "agents"  # adapters/agents/<agent>/: one adapter chain per agent (its own LATEST, cycle log)


def agent_adapters_dir(data: Path | str, agent: str) -> Path:
    """The adapters root of one agent's chain (``spanrl train --agent NAME``; ``spanrl serve
    --agent-adapter``). Under ``adapters/agents/`` so no agent name can collide with a cycle id."""
    if not agent or agent.startswith(".") or any(not (c.isalnum() or c in "._-") for c in agent):
        raise ValueError(f"agent name {agent!r}: use letters, digits, '.', '_' and '-' (it names a folder)")
    return adapters_dir(data) / AGENT_ADAPTERS / agent


def feedback_dir(data: Path | str) -> Path:
    """Delayed rewards: dropped in by the user, ``spanrl rollout``'s scorer and ``spanrl judge``."""
    return Path(data) / FEEDBACK


def mlruns_dir(data: Path | str) -> Path:
    """The local MLflow store of ``--report-to mlflow`` when ``MLFLOW_TRACKING_URI`` is not set."""
    return Path(data) / MLRUNS


def tensorboard_dir(data: Path | str) -> Path:
    """Where ``--report-to tensorboard`` writes event files (``tensorboard --logdir`` this)."""
    return Path(data) / TENSORBOARD


def demo_dir(data: Path | str) -> Path:
    return Path(data) / DEMO


def latest_snapshot_id(data: Path | str) -> str | None:
    """The snapshot ``transitions/LATEST`` names, or None before the first build."""
    return read_pointer(transitions_dir(data))


def latest_adapter_id(data: Path | str) -> str | None:
    """The adapter ``adapters/LATEST`` names, or None before the first training cycle."""
    return read_pointer(adapters_dir(data))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every whole JSON object line of ``path`` (none when it does not exist; torn lines skipped)."""
    if not Path(path).is_file():
        return []
    rows = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def cycle_log(folder: Path) -> list[dict[str, Any]]:
    """The lines of ``folder/cycles.jsonl``: an adapters root's cycle log, or the demo's record."""
    return read_jsonl(Path(folder) / CYCLE_LOG)


def demo_record(data: Path | str) -> list[dict[str, Any]]:
    """``demo/cycles.jsonl``: one line per finished demo cycle (its policy, candidate, snapshot)."""
    return cycle_log(demo_dir(data))


def read_training_state(folder: Path) -> dict[str, Any]:
    """An adapter folder's ``training_state.json``; {} when missing or unreadable (a draft half
    written, a folder that is no adapter): for cleanup and listings, which follow what they can."""
    try:
        state = json.loads((Path(folder) / TRAINING_STATE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def recorded_snapshot_ids(data: Path | str) -> set[str]:
    """Every snapshot id a training run (or the demo) recorded under ``data``: the lines of
    ``adapters/cycles.jsonl``, each adapter's training state (published, and drafts being saved,
    whose snapshot is already read) and ``demo/cycles.jsonl``."""
    adapters = adapters_dir(data)
    rows = cycle_log(adapters) + demo_record(data)
    if adapters.is_dir():
        rows += [read_training_state(state.parent) for state in adapters.glob(f"*/{TRAINING_STATE}")]
    return {str(r[k]) for r in rows for k in ("snapshot_id", "snapshot") if isinstance(r.get(k), str)}


def data_version(data: Path | str) -> tuple:
    """What changes when new data lands, as (mtime, size) stamps: the lake manifest, the LATEST
    snapshot and stage-2 build, the feedback folder, the config file and the cycle log (None where
    one is missing). Cheap enough to stat on every request of the web app."""
    stamps = []
    for path in (lake_dir(data) / FILE_STATE, transitions_dir(data) / POINTER, tables_dir(data) / POINTER,
                 feedback_dir(data), Path(data) / CONFIG_FILE, adapters_dir(data) / CYCLE_LOG):
        try:
            st = path.stat()
            stamps.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.append(None)
    return tuple(stamps)
