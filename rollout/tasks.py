"""The tasks file: JSON lines with ``input`` (text), optional ``task_id`` and ``expected``.

A task without ``task_id`` gets one derived from its input, so the same line keeps the same id (and
the same rollout ids, which is what makes a re-run resumable). Every problem names the file and line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanrl.errors import InputError


@dataclass(frozen=True)
class Task:
    task_id: str
    input: str
    line: dict[str, Any]  # the whole task line, handed to the scorer as it was written


def task_id_for(text: str) -> str:
    """The id of a task given without one: a hash of its input (stable across runs and machines)."""
    return "input:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def read_tasks(path: Path) -> list[Task]:
    """Every task of ``path`` in file order; InputError (file:line, what to do) on any bad line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"--tasks {path}: no such file; export one with `spanrl tasks --out {path}`") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"--tasks {path}: not UTF-8 text ({exc.reason}); write the tasks as JSON lines") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        task = _parse_line(path, number, raw)
        if task.task_id in seen:
            raise InputError(f"{path}:{number}: task_id {task.task_id!r} is also on line {seen[task.task_id]}; "
                             "give each task its own task_id (or remove the duplicate line)")
        seen[task.task_id] = number
        tasks.append(task)
    if not tasks:
        raise InputError(f"--tasks {path}: no task in the file; write one JSON object per line with an `input`")
    return tasks


def _parse_line(path: Path, number: int, raw: str) -> Task:
    where = f"{path}:{number}"
    try:
        line = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg}); each line is one object like "
                         '{"input": "...", "task_id": "t1"}') from None
    if not isinstance(line, dict):
        raise InputError(f"{where}: a task is a JSON object with an `input`, got {type(line).__name__}")
    text = line.get("input")
    if not isinstance(text, str) or not text:
        raise InputError(f"{where}: `input` must be non-empty text, got {text!r}")
    task_id = line.get("task_id")
    if task_id is None:
        task_id = task_id_for(text)
    elif isinstance(task_id, (int, float)) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id:
        raise InputError(f"{where}: `task_id` must be a non-empty string, got {task_id!r}")
    return Task(task_id=task_id, input=text, line=line)


def write_tasks(rows: list[dict[str, Any]], out: Path | None) -> None:
    """Tasks as JSON lines to ``out`` (written whole, then renamed) or stdout."""
    import sys

    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if out is None:
        sys.stdout.write(text)
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
