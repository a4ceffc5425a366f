"""One collector per data root: a second one is refused with a message, in-process and as a process."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from spanrl.errors import InputError
from tests.helpers.collector import inprocess_collector, running_collector


def test_second_inprocess_collector_is_refused_and_lock_is_freed(tmp_path) -> None:
    async def scenario() -> None:
        async with inprocess_collector(tmp_path):
            with pytest.raises(InputError, match="another collector .* is already writing"):
                async with inprocess_collector(tmp_path):
                    pass
        async with inprocess_collector(tmp_path):  # released on stop: a restart works
            pass

    asyncio.run(scenario())


def test_second_collector_process_exits_2(tmp_path) -> None:
    with running_collector(tmp_path) as ep:
        proc = subprocess.run([sys.executable, "-m", "spanrl", "collector", "--embedded", "--data", str(tmp_path),
                               "--http-port", "0", "--grpc-port", "0"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert f"pid {ep.proc.pid}" in proc.stderr and "already writing" in proc.stderr
