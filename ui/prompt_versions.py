"""The Prompts page of ``spanrl ui``: every agent's prompt versions (docs/prompts.md, "Artefacts") with
the evidence ``spanrl prompts optimize`` recorded for them, LATEST marked, and a link to the rollouts
each version ran (by the ``prompt_version`` column the gateway's span gives ``llm_calls`` and
``rollouts``). Read through the prompt store's own API, never by parsing its folders here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from spanrl.errors import InputError
from spanrl.prompts.store import list_agents, list_versions, read_version


def _sql_link(agent: str, version: str) -> str:
    """The SQL page with the query that lists the rollouts this version ran (``agent@version``)."""
    label = f"{agent}@{version}".replace("'", "''")
    query = ("SELECT rollout_id, task_id, purpose, final_reward FROM rollouts\n"
             f"WHERE prompt_version = '{label}' ORDER BY started_ns")
    return "/sql?q=" + quote(query, safe="")


def _evidence(meta: dict[str, Any]) -> dict[str, Any]:
    """The recorded evidence as the page shows it: verdict, baseline, train means, paired validation."""
    ev = meta.get("evidence") or {}
    train = ev.get("train") or {}
    cmp = (ev.get("validation") or {}).get("comparison") or {}
    ci = cmp.get("ci") if isinstance(cmp.get("ci"), list | tuple) and len(cmp.get("ci")) == 2 else None
    return {"verdict": ev.get("verdict"), "baseline": ev.get("baseline"),
            "train_baseline": (train.get("current") or {}).get("mean"),
            "train_candidate": (train.get("candidate") or {}).get("mean"),
            "diff": cmp.get("diff"), "ci": ci, "tasks": cmp.get("tasks"),
            "scored_rollouts": len(ev.get("rollout_ids") or [])}


def prompts_view(data: Path) -> dict[str, Any]:
    """Per agent (sorted), its versions newest first, each with method, parent, created_at, evidence and
    the prompt text; a version whose files cannot be read is listed with the store's message."""
    agents = []
    for agent in list_agents(data):
        versions = []
        for version in reversed(list_versions(data, agent)):
            try:
                stored = read_version(data, agent, version)
            except InputError as exc:
                versions.append({"version": version, "error": str(exc)})
                continue
            meta = stored.meta
            versions.append({"version": version, "latest": stored.latest, "method": meta.get("method"),
                             "parent": meta.get("parent"), "created_at": meta.get("created_at"),
                             "text": stored.text, "turns": [json.dumps(m, ensure_ascii=False) for m in stored.turns],
                             "rollouts_url": _sql_link(agent, version), **_evidence(meta)})
        agents.append({"agent": agent, "versions": versions})
    return {"agents": agents}
