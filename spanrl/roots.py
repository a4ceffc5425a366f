"""Which data root a command runs on, checked once for every command (``spanrl.cli`` wraps each one):

- ``--data s3://BUCKET/PREFIX`` (or ``$SPANRL_DATA``) runs a writer on the root's mirror under the
  lease and publishes it, a reader on a read-only mirror of the current state (spanrl/remote.py); any
  other command refuses such a root by name;
- a command that reads a data root refuses a missing one, local or on S3 (exit 2), rather than answer
  from nothing: ``spanrl sql --data /typo`` said "0 rows" with exit 0, and ``s3://bucket/typo-prefix``
  read as an empty root. Only ``ingest --input`` may start an S3 root (locally, the collector,
  ``rollout`` and ``demo`` start one too; they refuse an S3 root).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from spanrl.errors import InputError
from spanrl.options import existing_data_root
from spanrl.storage import is_remote, remote_url

# Which commands may take ``--data s3://...``: writers hold the lease and publish; readers work on a
# read-only mirror of the current state.
WRITERS = frozenset({"ingest", "transitions build", "transitions clean", "lake compact", "lake prune", "train",
                     "adapters promote", "adapters clean", "judge", "prompts promote"})
READERS = frozenset({"sql", "export", "ui", "tasks", "adapters list", "report", "prompts list", "prompts show",
                     "prompts diff"})
# Readers that read the root's Parquet where it lies, fetching only what a query needs (spanrl/inplace.py);
# the other readers work on a full read-only mirror.
IN_PLACE = frozenset({"sql"})
# Commands that take an S3 root as it is on the store, without a mirror: `lake verify` only reads objects,
# `lake gc` deletes unreferenced ones under the lease (spanrl/garbage.py).
DIRECT = frozenset({"lake verify", "lake gc"})
# Local commands that read the root's data, so a missing root is a typo, never "nothing yet". (The
# writers check their own: `lake compact` says "no trace lake here", `transitions build` and `ingest`
# "no such data root".)
NEEDS_ROOT = READERS | {"train", "judge"}


def check_local_root(path: str, params: dict[str, Any]) -> None:
    """Refuse a missing local data root for a command that reads one (``NEEDS_ROOT``); the adapters
    commands with ``--out`` read that folder instead."""
    data = params.get("data")
    if path not in NEEDS_ROOT or data is None or (path.startswith("adapters ") and params.get("out") is not None):
        return
    existing_data_root(Path(data))


def root_aware(command: Any, path: str) -> Any:
    """``command`` (a click command or group, named ``path`` under ``spanrl``) such that a missing root
    is refused before it runs and a ``--data`` on object storage runs it on the root's local mirror
    (``spanrl.remote.remote_root``)."""
    if isinstance(command, click.Group):
        for name, sub in list(command.commands.items()):
            command.commands[name] = root_aware(sub, f"{path} {name}")
        return command
    if getattr(command, "_spanrl_root_aware", False):
        return command
    original = command.invoke

    def invoke(ctx: click.Context) -> Any:
        data = ctx.params.get("data")
        if not is_remote(data):
            check_local_root(path, ctx.params)
            return original(ctx)
        if path in DIRECT:
            return original(ctx)
        if path not in WRITERS and path not in READERS:
            raise InputError(f"`spanrl {path}` cannot use a data root on object storage ({remote_url(data)}); "
                             f"these can: {', '.join(sorted(WRITERS | READERS | DIRECT))}. Give it a local --data.")
        from spanrl.inplace import in_place_root
        from spanrl.remote import remote_root

        may_start = path == "ingest" and ctx.params.get("input") is not None
        opened = in_place_root(str(data)) if path in IN_PLACE else \
            remote_root(str(data), write=path in WRITERS, command=f"spanrl {path}", may_start=may_start)
        with opened as local:
            ctx.params["data"] = local
            before = os.environ.get("SPANRL_DATA")
            os.environ["SPANRL_DATA"] = str(local)  # for code that resolves the root itself
            try:
                return original(ctx)
            finally:
                if before is None:
                    os.environ.pop("SPANRL_DATA", None)
                else:
                    os.environ["SPANRL_DATA"] = before

    command.invoke = invoke
    command._spanrl_root_aware = True
    return command
