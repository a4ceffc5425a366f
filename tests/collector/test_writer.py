"""Rotation, backup names, torn-line repair and write-failure handling of the span-file writer."""

from __future__ import annotations

import errno
import json
import os
import re
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spanrl.collector.writer import Outcome, RotatingFile, SignalWriter, WriteItem, backup_name

BACKUP = re.compile(r"^traces-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.jsonl$")


def test_backup_name_is_lumberjacks() -> None:
    when = datetime(2026, 1, 2, 15, 4, 5, 123456, tzinfo=UTC)
    assert backup_name(Path("/d/traces.jsonl"), when) == Path("/d/traces-2026-01-02T15-04-05.123.jsonl")


def test_rotates_by_size_and_every_file_is_complete(tmp_path: Path) -> None:
    f = RotatingFile(tmp_path / "traces.jsonl", max_bytes=100)
    lines = [json.dumps({"i": i, "pad": "x" * 20}).encode() + b"\n" for i in range(20)]
    for i in range(0, 20, 3):
        f.write_lines(lines[i:i + 3])
    f.close()
    files = sorted(tmp_path.iterdir())
    backups = [p for p in files if p.name != "traces.jsonl"]
    assert len(backups) >= 5 and all(BACKUP.match(p.name) for p in backups)
    got = []
    for p in [*backups, tmp_path / "traces.jsonl"]:
        data = p.read_bytes()
        assert data.endswith(b"\n"), p
        assert len(data) <= 100, p
        got += [json.loads(x)["i"] for x in data.splitlines()]
    assert sorted(got) == list(range(20))


def test_line_bigger_than_limit_goes_alone_into_a_file(tmp_path: Path) -> None:
    f = RotatingFile(tmp_path / "traces.jsonl", max_bytes=10)
    f.write_lines([b"small\n", b"x" * 50 + b"\n", b"tail\n"])
    f.close()
    contents = sorted(p.read_bytes() for p in tmp_path.iterdir())
    assert contents == sorted([b"small\n", b"x" * 50 + b"\n", b"tail\n"])


def test_same_millisecond_rotations_never_overwrite(tmp_path: Path) -> None:
    fixed = datetime(2026, 1, 2, 15, 4, 5, tzinfo=UTC)
    f = RotatingFile(tmp_path / "traces.jsonl", max_bytes=4, clock=lambda: fixed)
    for i in range(5):
        f.write_lines([f"{i}{i}{i}\n".encode()])
    f.close()
    assert sorted(p.read_bytes() for p in tmp_path.iterdir()) == [f"{i}{i}{i}\n".encode() for i in range(5)]


def test_restart_appends_and_closes_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b'{"ok":1}\n{"torn":')
    f = RotatingFile(path, max_bytes=1 << 20)
    f.write_lines([b'{"ok":2}\n'])
    f.close()
    assert path.read_bytes() == b'{"ok":1}\n{"torn":\n{"ok":2}\n'


def test_failed_write_is_cut_back_so_no_half_line_remains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "traces.jsonl"
    f = RotatingFile(path, max_bytes=1 << 20)
    f.write_lines([b'{"a":1}\n'])
    real_write = os.write
    calls = {"n": 0}

    def half_then_enospc(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:3]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_enospc)
    with pytest.raises(OSError):
        f.write_lines([b'{"b":2}\n'])
    monkeypatch.setattr(os, "write", real_write)
    f.write_lines([b'{"c":3}\n'])
    f.close()
    assert path.read_bytes() == b'{"a":1}\n{"c":3}\n'


def _item(signal: str, payload: bytes) -> WriteItem:
    return WriteItem(signal, payload, lambda p: p, len(payload), Future())


def test_writer_thread_acks_after_write_and_reports_enospc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[int] = []
    w = SignalWriter(tmp_path, 1 << 20, fsync=True, on_done=lambda item: released.append(item.size))
    ok = _item("traces", b'{"t":1}')
    w.submit(ok)
    assert ok.future.result(5) is Outcome.OK
    assert (tmp_path / "traces.jsonl").read_bytes() == b'{"t":1}\n'

    def enospc(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", enospc)
    full = _item("logs", b'{"l":1}')
    w.submit(full)
    assert full.future.result(5) is Outcome.DISK_FULL
    monkeypatch.undo()
    again = _item("logs", b'{"l":2}')
    w.submit(again)
    assert again.future.result(5) is Outcome.OK
    w.close()
    w.close()  # twice is fine
    assert (tmp_path / "logs.jsonl").read_bytes() == b'{"l":2}\n'
    assert released == [7, 7, 7] and w.errors["disk_full"] == 1


def test_failed_rotation_keeps_the_active_file_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = RotatingFile(tmp_path / "traces.jsonl", max_bytes=10)
    f.write_lines([b"12345678\n"])

    def no_rename(src: object, dst: object) -> None:
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "rename", no_rename)
    with pytest.raises(OSError):
        f.write_lines([b"abcdefgh\n"])  # needs a rotation, which fails
    monkeypatch.undo()
    f.write_lines([b"abcdefgh\n"])
    f.close()
    assert sorted(p.read_bytes() for p in tmp_path.iterdir()) == [b"12345678\n", b"abcdefgh\n"]


def test_a_serialiser_bug_answers_internal_instead_of_hanging(tmp_path: Path) -> None:
    w = SignalWriter(tmp_path, 1 << 20, fsync=False)

    def broken(_: object) -> bytes:
        raise RuntimeError("bug")

    item = WriteItem("traces", b"x", broken, 1, Future())
    w.submit(item)
    assert item.future.result(5) is Outcome.INTERNAL
    good = _item("traces", b'{"ok":1}')
    w.submit(good)
    assert good.future.result(5) is Outcome.OK
    w.close()
