"""An agent's stdout/stderr, kept bounded: the head and the tail on disk, everything hashed and counted.

An agent may print without limit (a debug dump, a progress loop, a model that never stops). The
runner reads each stream as it comes and keeps the first ``head`` bytes and the last ``tail`` bytes
(with a one-line marker saying how much was left out between them), so its memory and ``runs/`` stay
bounded whatever the agent prints; the sha256 and the byte count cover the whole stream (the
identical-outputs check compares whole outputs). A scorer sees the kept text: the final answer is at
the end, which the tail keeps.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

CHUNK = 64 * 1024
HEAD_BYTES = 256 * 1024  # kept from the start of each stream
TAIL_BYTES = 256 * 1024  # kept from the end of each stream


@dataclass
class Captured:
    """What one stream carried: every byte counted and hashed, ``kept`` of them on disk."""

    total: int = 0
    kept: int = 0
    sha256: str = ""


async def capture(stream: asyncio.StreamReader, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> Captured:
    """Read ``stream`` to its end into ``path`` (head + marker + tail)."""
    digest = hashlib.sha256()
    total = 0
    ring = bytearray()  # the last ``tail`` bytes past the head
    with open(path, "wb") as out:
        while chunk := await stream.read(CHUNK):
            digest.update(chunk)
            size = len(chunk)
            if total < head:
                take = chunk[: head - total]
                out.write(take)
                chunk = chunk[len(take):]
            total += size
            if chunk:
                ring += chunk
                if len(ring) > tail:
                    del ring[: len(ring) - tail]
        first = min(total, head)
        elided = total - first - len(ring)
        if elided > 0:
            out.write(f"\n[spanrl rollout: {elided} bytes left out here; {total} in all]\n".encode())
        out.write(ring)
    return Captured(total, first + len(ring), digest.hexdigest())
