"""Child processes for the demo (and any command that drives other ``spanrl`` commands): start one
in its own process group, wait for it to be ready, run a step to completion, and always stop the
whole group, so Ctrl-C or SIGTERM never leaves a server or agent behind.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spanrl.processes import stop_group


def free_port() -> int:
    """A loopback port the OS says is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spanrl_command(*args: str) -> list[str]:
    """``python -m spanrl ...`` with this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-m", "spanrl", *args]


@contextlib.contextmanager
def background(name: str, cmd: list[str], log_dir: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` in its own process group; on exit SIGTERM the group, then SIGKILL after 15 s."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"{name}.log", "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield proc
    finally:
        stop_group(proc)
        log.close()


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """GET ``url`` -> (status, body); (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except OSError as exc:
        return getattr(exc, "code", 0) or 0, str(exc)


def wait_until(check, what: str, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Poll ``check()`` until true; fail with the log's tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {proc.returncode}; see {log}\n{tail(log)}")
        time.sleep(0.5)
    raise RuntimeError(f"{what}: not ready after {timeout_s:.0f} s; see {log}\n{tail(log)}")


def exit_words(code: int) -> str:
    """A process's exit status in words: a signal by name, SIGKILL with its commonest cause."""
    if code >= 0:
        return f"exited with {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    oom = " (the kernel's out-of-memory killer sends it when the machine runs out of memory: `dmesg` says so)"
    return f"was killed by {name}" + (oom if -code == signal.SIGKILL else "")


def stopped_helpers(procs: dict[str, subprocess.Popen], log_dir: Path) -> str:
    """What stopped among the background helpers (``name -> process``), in words with their logs;
    "" while all of them run. A rollout phase that fails because its server is gone says this, not
    only the agents' "Connection error"."""
    gone = [f"the {name} process (pid {proc.pid}) {exit_words(proc.returncode)}; see {log_dir / (name + '.log')}"
            for name, proc in procs.items() if proc.poll() is not None]
    return "; ".join(gone)


def http_post_json(url: str, body: dict[str, Any], timeout: float = 600.0) -> tuple[int, str]:
    """POST a JSON body -> (status, text); (0, error) when nothing answers."""
    import json

    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - our own loopback server
            return resp.status, resp.read().decode("utf-8", "replace")
    except OSError as exc:
        detail = exc.read().decode("utf-8", "replace") if hasattr(exc, "read") else str(exc)
        return getattr(exc, "code", 0) or 0, detail


def tail(path: Path, lines: int = 15, start: int = 0) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class StepError(RuntimeError):
    """A pipeline step that exited non-zero: its exit code and the tail of its log."""

    def __init__(self, message: str, code: int, log_tail: str) -> None:
        super().__init__(message)
        self.code, self.log_tail = code, log_tail


def run_step(name: str, cmd: list[str], log_dir: Path) -> float:
    """Run one pipeline step to completion (its output goes to the log); return its seconds."""
    log_path = log_dir / f"{name}.log"
    started = time.monotonic()
    with open(log_path, "ab") as log:
        log.write(f"\n$ {shlex.join(cmd)}\n".encode())
        log.flush()
        offset = log.tell()  # this run's output starts here (the log keeps every earlier run)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait()
        finally:
            stop_group(proc)
    if code != 0:
        last = tail(log_path, start=offset)
        raise StepError(f"`{shlex.join(cmd[2:])}` failed with exit code {code}; see {log_path}\n{last}", code, last)
    return time.monotonic() - started


def install_sigterm() -> None:
    """SIGTERM behaves like Ctrl-C, so every ``finally`` stops its subprocesses."""

    def raise_interrupt(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_interrupt)
