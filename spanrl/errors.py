"""The two kinds of failure every stage distinguishes (docs/architecture.md, CLI contract: exit 2 = bad input, 1 = internal).

Stages raise ``InputError`` (or a subclass) when the user can fix the problem: a bad flag, a
malformed file, a snapshot of another schema version. The message names the file, the line when
there is one, and what to do. The CLI translates it once into exit code 2.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import click


class InputError(Exception):
    """Bad usage or bad input: the message says what was wrong and what to do."""


class BadInput(click.ClickException):
    """Click-side form of InputError: printed as ``Error: ...`` with exit code 2."""

    exit_code = 2


# What the machine ran out of is not bad input: a stage that hits it stops whole and records nothing, so
# the next run reads the same bytes again. Before this, stage 1 took DuckDB's out-of-memory error for a file
# it "cannot read as OTLP JSON lines": the file became a reject, was marked read, and its spans were lost.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def resource_trouble(exc: BaseException) -> str | None:
    """``memory``, ``disk`` (no space or quota left) or ``io`` (another failed read or write of DuckDB's)
    when ``exc`` is the machine's trouble rather than the data's; None otherwise."""
    duckdb = sys.modules.get("duckdb")  # only a stage that has imported DuckDB can have one of its errors
    if duckdb is not None and isinstance(exc, duckdb.OutOfMemoryException):
        return "memory"
    if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
        return "disk"
    if duckdb is not None and isinstance(exc, duckdb.IOException):  # DuckDB words the OS's error in its own
        return "disk" if any(os.strerror(e) in str(exc) for e in _NO_SPACE) else "io"
    return None


def resource_error(exc: BaseException, kind: str, where: str, memory_limit: str, root: Path | str,
                   state: str) -> InputError:
    """The message for ``resource_trouble``'s ``kind``: where it stopped, DuckDB's or the OS's own words,
    ``state`` (what was and was not recorded), and what to do about it."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    todo = {
        "memory": f"DuckDB ran out of memory under --memory-limit {memory_limit} ({first}). {state} If the machine "
                  "has the memory, raise the limit (--memory-limit, or memory_limit under [ingest] in spanrl.toml).",
        "disk": f"{first}. {state} Free space on the file system of {root} and run it again.",
    }.get(kind, f"{first}. {state} Check the file system of {root} (space, permissions) and run it again.")
    return InputError(f"{where} stopped: {todo}")
