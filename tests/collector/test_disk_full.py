"""A full disk is survived without help (issue 9 item 11), on a real, small tmpfs.

- ENOSPC while creating the new active file at rotation (no inode left) used to leave the receiver
  answering 503 forever; once an inode is free again, the next request must be written.
- A receiver restarted on a full disk whose span file ends in a torn line used to fail to start (it
  could not write the closing newline); it must start, answer 503, and write once space is back.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.helpers.collector import inprocess_collector, make_traces, running_collector
from tests.helpers.disk import fill, tmpfs

PB = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def small_fs(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A data root whose ``otel/`` is a tmpfs mounted for this test (options from the ``fs_options`` marker).

    Only the span files live on it: the collector's log stays on the normal disk.
    """
    marker = request.node.get_closest_marker("fs_options")
    data = tmp_path / "data"
    with tmpfs(data / "otel", marker.args[0]):
        yield data


def span_lines(path: Path) -> list[str]:
    names = []
    for line in path.read_bytes().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        names += [s["name"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    return names


@pytest.mark.fs_options("size=1m,nr_inodes=4")
def test_no_inode_at_rotation_recovers_once_one_is_free(small_fs: Path) -> None:
    async def go() -> list[int]:
        async with inprocess_collector(small_fs, rotate_mb=0.001) as (_, http, _g), aiohttp.ClientSession() as s:
            statuses = []

            async def send(name: str) -> None:
                body = make_traces(1, name=name, attrs={"pad": "p" * 700}).SerializeToString()
                async with s.post(http + "/v1/traces", data=body, headers=PB) as resp:
                    statuses.append(resp.status)

            await send("first")  # otel/, traces.jsonl, logs.jsonl: 3 of the 4 inodes
            (small_fs / "otel" / "filler").touch()  # the last one: rotation cannot create a new traces.jsonl
            await send("second")
            await send("third")
            (small_fs / "otel" / "filler").unlink()
            await send("fourth")
            return statuses

    statuses = asyncio.run(go())
    assert statuses == [200, 503, 503, 200]
    otel = small_fs / "otel"
    assert span_lines(otel / "traces.jsonl") == ["fourth-0"]
    backups = sorted(otel.glob("traces-*.jsonl"))
    assert [span_lines(p) for p in backups] == [["first-0"]]


@pytest.mark.fs_options("size=64k")
def test_restart_on_a_full_disk_with_a_torn_line_starts_and_recovers(small_fs: Path) -> None:
    otel = small_fs / "otel"
    torn = b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[{"name":"torn' + b"x" * 4096
    (otel / "traces.jsonl").write_bytes(torn[:4096])  # a whole page: closing it needs a new block
    (otel / "logs.jsonl").write_bytes(b"")
    fill(otel / "filler")

    def post(url: str, name: str) -> int:
        body = make_traces(1, name=name).SerializeToString()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=PB), timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as exc:
            return exc.code

    with running_collector(small_fs) as ep:
        url = ep.http + "/v1/traces"
        full = post(url, "while-full")
        os.unlink(otel / "filler")
        freed = post(url, "after-free")
    assert (full, freed) == (503, 200)
    data = (otel / "traces.jsonl").read_bytes()
    assert data.startswith(torn[:4096] + b"\n")  # the torn line was closed, not merged
    assert span_lines(otel / "traces.jsonl") == ["after-free-0"]
