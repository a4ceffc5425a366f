"""Base model and adapter folders: load (local only), continue from LATEST, save atomically, notify.

An adapter folder ``adapters/<cycle_id>/`` appears only by one ``os.rename`` of a complete temp
folder, and ``adapters/LATEST`` only by ``os.replace``, so a crash leaves the old state or the new.

Continuing from LATEST requires the same base model: same resolved path *and* same base hash
(config.json plus size and first MiB of every weight file). A mismatch is an error that says to
pass ``--fresh`` or the right ``--model`` -- silently starting over would throw away what the
earlier cycles learned, and silently continuing would put an adapter on weights it was not trained for.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from spanrl.errors import InputError
from spanrl.layout import ADAPTER_CONFIG, CYCLE_LOG, TRAINING_STATE, cycle_log, read_training_state
from spanrl.layout import adapters_dir as _adapters_dir
from spanrl.publish import draft_folder, publish, read_pointer, write_pointer
from spanrl.transitions.snapshot import snapshot_column, snapshot_exists, transitions_dir

WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.gguf")


def check_local_model(path: Path) -> Path:
    """A local folder with a config.json, or an InputError that says local folder required, no hub."""
    text = str(path)
    if not path.exists():
        hubby = re.fullmatch(r"[\w.-]+/[\w.-]+", text) is not None and not text.startswith((".", "/"))
        hint = f" ({text!r} looks like a hub id)" if hubby else ""
        raise InputError(
            f"--model {text}: no such folder{hint}; local folder required, no hub downloads: "
            "pass the path of a folder holding config.json and the weights (save_pretrained output)"
        )
    if not (path / "config.json").is_file():
        raise InputError(f"--model {text}: no config.json there; local folder required, no hub (a save_pretrained folder)")
    return path.resolve()


def base_model_hash(path: Path) -> str:
    """Cheap identity of a base checkpoint: config.json bytes, then name, size and first MiB of each weight file."""
    h = hashlib.sha256((path / "config.json").read_bytes())
    weights = sorted({p for g in WEIGHT_GLOBS for p in path.glob(g)})
    for p in weights:
        h.update(p.name.encode())
        h.update(str(p.stat().st_size).encode())
        with open(p, "rb") as fh:
            h.update(fh.read(1 << 20))
    return h.hexdigest()


class Parent(NamedTuple):
    """The adapter a new cycle continues from: adapters/LATEST's id, folder and training_state.json."""

    cycle_id: str
    folder: Path
    state: dict[str, Any]


def read_latest(root: Path) -> Parent | None:
    """(cycle_id, folder, training_state) of adapters/LATEST, or None when there is none yet."""
    cycle_id = read_pointer(root)
    if cycle_id is None:
        return None
    folder = root / cycle_id
    state_path = folder / TRAINING_STATE
    try:
        state = json.loads(state_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{state_path}: unreadable ({exc}); pass --fresh to start a new adapter") from None
    return Parent(cycle_id, folder, state)


def check_parent(parent: Parent, base_path: Path, base_hash: str) -> None:
    cycle_id, folder, state = parent
    if state.get("base_model_hash") != base_hash or state.get("base_model") != str(base_path):
        raise InputError(
            f"{folder}: adapters/LATEST ({cycle_id}) was trained on {state.get('base_model')} "
            f"(hash {str(state.get('base_model_hash'))[:12]}), not on {base_path} (hash {base_hash[:12]}); "
            "pass that --model to continue it, or --fresh to start a new adapter"
        )


def lora_targets(model: Any) -> list[str]:
    """``all-linear`` resolved to sorted leaf names (q_proj, ..., down_proj), output head excluded.

    Short names keep adapter_config.json stable and readable; vLLM matches them by suffix.
    """
    import torch

    head = model.get_output_embeddings()
    names = {name.rsplit(".", 1)[-1] for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear) and mod is not head}
    return sorted(names)


def next_cycle_id(parent_state: dict[str, Any] | None) -> tuple[int, str]:
    n = int((parent_state or {}).get("cycle", 0)) + 1
    return n, f"{n:04d}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"


def save_cycle(
    root: Path,
    cycle_id: str,
    model: Any,
    state: dict[str, Any],
    metrics: list[dict[str, Any]],
    write_report: Any = None,
    promote: bool = True,
) -> Path:
    """Write the adapter + state + metrics (+ report) into a temp folder, rename, swap LATEST
    (``promote=False``: a candidate; LATEST stays, ``promote_adapter`` can swap it later)."""
    with draft_folder(root, cycle_id) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        (tmp / "README.md").unlink(missing_ok=True)  # peft's model card: not part of our contract
        (tmp / TRAINING_STATE).write_text(json.dumps(state, indent=2, sort_keys=True))
        with open(tmp / "metrics.jsonl", "w", encoding="utf-8") as fh:
            for row in metrics:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
        if write_report is not None:
            write_report(tmp / "report.png")
        return publish(tmp, cycle_id, point=promote)


def promote_adapter(root: Path, cycle_id: str) -> Path:
    """Point ``root/LATEST`` at an adapter folder already there: promote a candidate or roll back.

    The folder must be a whole adapter (``adapter_config.json`` and ``training_state.json``); the
    server and the next ``spanrl train`` follow LATEST, so this one write is the whole rollback.
    """
    folder = Path(root) / cycle_id
    missing = [n for n in (ADAPTER_CONFIG, TRAINING_STATE) if n not in adapter_parts(folder)]
    if cycle_id in ("", ".", "..") or "/" in cycle_id or missing:
        known = ", ".join(sorted(p.name for p in Path(root).glob("[0-9]*") if p.is_dir())[-5:]) or "none"
        raise InputError(f"{folder}: not an adapter folder (missing {', '.join(missing) or 'folder'}); "
                         f"pass one of the ids under {root} (latest: {known})")
    write_pointer(root, cycle_id)
    return folder


def passes_gate(candidate: float | None, current: float | None, margin: float) -> bool:
    """The promotion rule: a candidate replaces the current adapter unless its validation reward is
    below the current one's by more than ``margin``. No score for the current one: promote (there
    is nothing to protect); no score for the candidate: keep it a candidate (nothing shows it is not worse)."""
    if current is None:
        return True
    if candidate is None:
        return False
    return candidate >= current - margin


def adapters_dir(data: Path) -> Path:
    """Where ``spanrl train`` writes adapters by default (``--out`` overrides)."""
    return _adapters_dir(data)


def adapter_parts(folder: Path) -> set[str]:
    """Which of an adapter folder's two defining files ``folder`` holds: ``adapter_config.json``
    (PEFT's, what vLLM and ``spanrl serve`` load) and ``training_state.json`` (ours)."""
    return {n for n in (ADAPTER_CONFIG, TRAINING_STATE) if (Path(folder) / n).is_file()}


def read_state(folder: Path) -> dict[str, Any]:
    """An adapter folder's training state, {} when missing or unreadable (a draft half written):
    for listings and cleanup, which follow what they can; ``read_latest`` refuses instead."""
    return read_training_state(folder)


def is_peft_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a PEFT adapter (``adapter_config.json``): what a server can load."""
    return ADAPTER_CONFIG in adapter_parts(folder)


def latest_adapter(root: Path) -> Path | None:
    """The folder ``root/LATEST`` names (an adapters root), or None when nothing was trained yet."""
    cycle_id = read_pointer(root)
    return None if cycle_id is None else root / cycle_id


def read_cycles(root: Path) -> list[dict[str, Any]]:
    """Every line of ``root/cycles.jsonl`` (one per finished cycle); a torn last line is skipped."""
    return cycle_log(root)


def append_cycle_line(root: Path, line: dict[str, Any]) -> None:
    """One JSON line per finished cycle in adapters/cycles.jsonl (what ``spanrl report`` plots)."""
    with open(root / CYCLE_LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, sort_keys=True) + "\n")


def notify_vllm(url: str, cycle_id: str, folder: Path, timeout: float = 10.0) -> str | None:
    """POST vLLM's ``/v1/load_lora_adapter``; returns a warning text on failure, None on success."""
    endpoint = url.rstrip("/") + "/v1/load_lora_adapter"
    body = json.dumps({"lora_name": cycle_id, "lora_path": str(folder.resolve())}).encode()
    req = urllib.request.Request(endpoint, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user-given URL
            resp.read()
        return None
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:200]
        return f"--notify {endpoint}: HTTP {exc.code} {detail}; load {folder} by hand"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"--notify {endpoint}: {exc}; load {folder} by hand"


def trained_rollout_ids(data: Path, root: Path, parent: Parent) -> set[str]:
    """Every rollout id the adapter chain ending at ``parent`` was trained on (``--new-only``).

    Walks ``parent`` links through each cycle's training_state.json and reads the ``rollout_id``
    column of the snapshot each cycle trained on. A snapshot that is gone makes the answer unknown,
    which is an error: guessing would train old rollouts again or skip new ones.
    """
    seen: set[str] = set()
    cycle_id, state = parent.cycle_id, parent.state
    while True:
        sid = state.get("snapshot_id")
        if not sid or not snapshot_exists(data, str(sid)):
            raise InputError(f"{transitions_dir(data) / str(sid)}: cycle {cycle_id} was trained on snapshot {sid}, "
                             "which is gone, so which rollouts are new is unknown; train without --new-only "
                             "(or restore that snapshot)")
        seen.update(snapshot_column(data, str(sid), "rollout_id"))
        if not state.get("parent"):
            return seen
        cycle_id = state["parent"]
        path = root / cycle_id / TRAINING_STATE
        try:
            state = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: unreadable ({exc}); train without --new-only, or with --fresh") from None
