"""The two kinds of failure every stage distinguishes (docs/architecture.md, CLI contract: exit 2 = bad input, 1 = internal).

Stages raise ``InputError`` (or a subclass) when the user can fix the problem: a bad flag, a
malformed file, a snapshot of another schema version. The message names the file, the line when
there is one, and what to do. The CLI translates it once into exit code 2.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from spanrl.memory import describe_memory_limit


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


@contextmanager
def stops_on_resource_trouble(where: str, memory_limit: str, root: Path | str, state: str) -> Iterator[None]:
    """Run a stage's body; the machine's trouble in it (``resource_trouble``) becomes the ``InputError``
    that says ``where`` it stopped, DuckDB's or the OS's own words, ``state`` (what was and was not
    recorded) and what to do about it (exit 2). Any other error passes through unchanged."""
    try:
        yield
    except Exception as exc:
        kind = resource_trouble(exc)
        if kind is None:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        todo = {
            "memory": f"DuckDB ran out of memory under --memory-limit {describe_memory_limit(memory_limit)} ({first}). {state} If the "
                      "machine has the memory, raise the limit (--memory-limit, or memory_limit under [ingest] in "
                      "spanrl.toml).",
            "disk": f"{first}. {state} Free space on the file system of {root} and run it again.",
        }.get(kind, f"{first}. {state} Check the file system of {root} (space, permissions) and run it again.")
        raise InputError(f"{where} stopped: {todo}") from exc


# A Parquet file spanrl reads that is no longer one (spanrl writes every file whole and renames it into
# place, so this is damage from outside: a disk, a copy cut short, a hand edit). DuckDB and pyarrow name the
# file in their own words; the CLI turns that into where it is and how to get its rows back (exit 2).
_DAMAGE = re.compile(r"magic bytes|not a parquet file|is this a 'parquet' file|corrupt|deserializ|decompress", re.I)
_PARQUET_PATH = re.compile(r"""['"]([^'"]*\.parquet)['"]""")


def damaged_parquet(exc: BaseException) -> str | None:
    """The path of the Parquet file ``exc`` says is damaged, else None."""
    text = str(exc)
    found = _PARQUET_PATH.search(text) if _DAMAGE.search(text) else None
    return found.group(1) if found else None


def damaged_parquet_error(path: str, exc: BaseException) -> InputError:
    """What to do about a damaged file, by where it sits: the lake's rows come back from the span files
    (the manifest set aside makes the next ingest read them all again, dropping what the lake still
    holds); stage 2's tables and snapshots are rebuilt from the lake."""
    first = str(exc).strip().splitlines()[0]
    parts = Path(path).parts[:-1]
    # the folder nearest the file decides (a data root may itself sit under a folder named lake)
    at = next((i for i in range(len(parts) - 1, -1, -1) if parts[i] in ("lake", "transitions")), None)
    under = parts[at] if at is not None else None
    if under == "lake" and not any(p.startswith("_") for p in parts[at + 1:]):
        todo = ("move it out of the lake and move lake/_files.parquet aside: the next `spanrl ingest` reads every "
                "span file under otel/ again and drops the spans the lake still holds, so this file's spans come "
                "back from the span files that are still there")
    elif under == "transitions":
        todo = "rebuild stage 2 from the lake: `spanrl transitions build --rebuild`"
    else:
        todo = "move it out of the data root, or restore it from a copy"
    return InputError(f"{path}: not a readable Parquet file any more ({first}); spanrl writes files whole, so it "
                      f"was damaged after it was written. To go on, {todo}.")
