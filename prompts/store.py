"""The prompt store: ``DATA/prompts/<agent>/<version>/prompt.txt`` + ``meta.json`` (+ ``turns.json``, the
worked examples a version adds as conversation turns) and ``DATA/prompts/<agent>/LATEST`` (docs/prompts.md).
The one owner of those files.

A version folder is written whole into a hidden temp folder and renamed into place, and LATEST is
swapped by ``os.replace`` (both through ``spanrl/publish.py``, as adapters and snapshots are), so
``spanrl gateway --prompts`` reading the store on every call sees the old prompt or the new one, never
half of one. A version is never rewritten: promoting is moving LATEST, rolling back the same.

Imported by the gateway on its request path: standard library and ``spanrl.publish`` only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from spanrl.errors import InputError
from spanrl.publish import draft_folder, publish, read_pointer, write_pointer, write_text_atomic

PROMPT_FILE, META_FILE, TURNS_FILE = "prompt.txt", "meta.json", "turns.json"
_VERSION = re.compile(r"^\d{4,}$")


@dataclass
class PromptVersion:
    """One stored prompt: its agent, version id, text and meta (parent, method, evidence, ...); ``turns``:
    chat messages (OpenAI shape) the gateway puts right after the system message, worked examples the model
    sees as conversation it had (empty for most versions)."""

    agent: str
    version: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    latest: bool = False
    turns: list[dict[str, Any]] = field(default_factory=list)


def text_sha256(text: str) -> str:
    """The hash the gateway matches an agent's original system prompt by (UTF-8, as sent)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def turns_sha256(turns: list[dict[str, Any]]) -> str | None:
    """What tells two versions with the same text apart: their turns (None: none)."""
    return text_sha256(json.dumps(turns, sort_keys=True, ensure_ascii=False)) if turns else None


def prompts_dir(data: Path | str) -> Path:
    return Path(data) / "prompts"


def agent_dir(data: Path | str, agent: str) -> Path:
    """The agent's folder; its name percent-encoded (a model name such as ``Qwen/Qwen2.5-7B`` is an agent too)."""
    if not agent or agent.startswith(".") or len(agent) > 200:
        raise InputError(f"agent name {agent!r}: give a non-empty name (at most 200 characters) that does not "
                         "start with '.'")
    return prompts_dir(data) / quote(agent, safe="-_.@:+=")


def list_agents(data: Path | str) -> list[str]:
    root = prompts_dir(data)
    if not root.is_dir():
        return []
    return sorted(unquote(p.name) for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def list_versions(data: Path | str, agent: str) -> list[str]:
    folder = agent_dir(data, agent)
    if not folder.is_dir():
        return []
    return sorted((p.name for p in folder.iterdir() if p.is_dir() and _VERSION.match(p.name)), key=int)


def latest_version(data: Path | str, agent: str) -> str | None:
    return read_pointer(agent_dir(data, agent))


def read_version(data: Path | str, agent: str, version: str | None = None) -> PromptVersion:
    """A stored version (None or ``LATEST``: the one LATEST names); InputError naming the folder and what to do."""
    folder = agent_dir(data, agent)
    latest = latest_version(data, agent)
    if version in (None, "LATEST"):
        if latest is None:
            known = ", ".join(list_agents(data)) or "none"
            raise InputError(f"{folder}: no LATEST prompt for agent {agent!r} (agents with prompts: {known}); "
                             f"run `spanrl prompts optimize --agent {agent} ...` or promote a version")
        version = latest
    path = folder / str(version)
    try:
        text = (path / PROMPT_FILE).read_text(encoding="utf-8")
        meta = _json(path / META_FILE)
        turns = _json(path / TURNS_FILE) if meta.get("turns_sha256") else []
    except FileNotFoundError:
        raise InputError(f"{path}: no prompt version {version} of agent {agent!r} (versions: "
                         f"{', '.join(list_versions(data, agent)) or 'none'}; `spanrl prompts list`)") from None
    if not isinstance(turns, list) or not all(isinstance(m, dict) and m.get("role") for m in turns):
        raise InputError(f"{path / TURNS_FILE}: not a list of chat messages; the store writes it whole, so it was "
                         "changed by hand: restore it or remove the version folder")
    return PromptVersion(agent, str(version), text, meta, latest=str(version) == latest, turns=turns)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc}); the store writes it whole, so it was changed by hand: "
                         "restore it or remove the version folder") from None


def find_text(data: Path | str, agent: str, text: str, turns: list[dict[str, Any]] | None = None) -> str | None:
    """The version holding exactly ``text`` and ``turns``, if any (re-running an optimization reuses it and its
    runs)."""
    sha, tsha = text_sha256(text), turns_sha256(turns or [])
    for version in list_versions(data, agent):
        meta_path = agent_dir(data, agent) / version / META_FILE
        try:
            meta = json.loads(meta_path.read_text())
            if meta.get("sha256") == sha and meta.get("turns_sha256") == tsha:
                return version
        except (OSError, ValueError):
            continue
    return None


def add_version(data: Path | str, agent: str, text: str, meta: dict[str, Any], promote: bool = False,
                turns: list[dict[str, Any]] | None = None) -> PromptVersion:
    """Store ``text`` (and ``turns``) as the agent's next version (or find the version already holding them);
    LATEST moves only with ``promote`` (a candidate is staged: the gateway applies it only when asked by URL)."""
    if not text.strip():
        raise InputError(f"agent {agent!r}: an empty prompt cannot be stored")
    folder = agent_dir(data, agent)
    turns = list(turns or [])
    found = find_text(data, agent, text, turns)
    if found is None:
        meta = {**meta, "agent": agent, "sha256": text_sha256(text),
                **({"turns_sha256": turns_sha256(turns), "turns": len(turns)} if turns else {}),
                "created_at": meta.get("created_at") or datetime.now(UTC).isoformat()}
        for _ in range(100):  # another writer may take the same number: rename fails, take the next
            versions = list_versions(data, agent)
            version = f"{(int(versions[-1]) + 1) if versions else 1:04d}"
            with draft_folder(folder, f"{version}-{os.getpid()}") as tmp:
                (tmp / PROMPT_FILE).write_text(text, encoding="utf-8")
                (tmp / META_FILE).write_text(json.dumps({**meta, "version": version}, indent=2) + "\n")
                if turns:
                    (tmp / TURNS_FILE).write_text(json.dumps(turns, indent=1, ensure_ascii=False) + "\n",
                                                  encoding="utf-8")
                try:
                    publish(tmp, version, point=False)
                except OSError:
                    continue
            found = version
            break
        else:
            raise InputError(f"{folder}: could not take a new version number; check the folder is writable")
    if promote:
        write_pointer(folder, found)
    return read_version(data, agent, found)


def promote_version(data: Path | str, agent: str, version: str) -> PromptVersion:
    """Point the agent's LATEST at a stored version (a candidate, or a roll back)."""
    stored = read_version(data, agent, version)
    write_pointer(agent_dir(data, agent), stored.version)
    stored.latest = True
    return stored


def agent_for_hash(data: Path | str, sha: str) -> str | None:
    """The agent whose LATEST records ``sha`` as the original system prompt it replaces."""
    for agent in list_agents(data):
        latest = latest_version(data, agent)
        if latest is None:
            continue
        try:
            meta = json.loads((agent_dir(data, agent) / latest / META_FILE).read_text())
        except (OSError, ValueError):
            continue
        if sha in (meta.get("original_sha256"), meta.get("sha256")):
            return agent
    return None


def record_evidence(data: Path | str, agent: str, version: str, evidence: dict[str, Any]) -> PromptVersion:
    """Add how a version was scored to its meta.json (atomically; its prompt text never changes)."""
    stored = read_version(data, agent, version)
    meta = {**stored.meta, "evidence": evidence}
    write_text_atomic(agent_dir(data, agent) / version / META_FILE, json.dumps(meta, indent=2) + "\n")
    stored.meta = meta
    return stored
