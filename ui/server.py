"""Run the web app: bind (a taken port fails at once), warm the lake once, print the URL, serve until Ctrl-C."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

from aiohttp import web

from spanrl.errors import InputError
from spanrl.layout import lake_dir
from spanrl.ui.app import make_app
from spanrl.ui.data import Lake
from spanrl.webguard import is_loopback


def run_ui(data: Path, host: str, port: int, token: str | None, allow_hosts: tuple[str, ...] = ()) -> None:
    """``spanrl ui``: InputError when the data root does not exist; a warning when it is served
    beyond this machine without a token."""
    if not data.is_dir():
        raise InputError(f"{data}: no such data root; pass --data DIR (the folder `spanrl ingest` wrote)")
    if token is None and not is_loopback(host):
        sys.stderr.write(f"warning: serving {data} on {host} without --token: anyone who reaches this port "
                         "can read every prompt and answer in the lake\n")
    sock = bind(host, port)  # first: a taken port is said before seconds of preparation (issue 31)
    try:
        t0 = time.perf_counter()
        note = preparing_note(data)
        if note:
            sys.stderr.write(f"spanrl ui: {note} ...\n")
        lake = Lake(data)
        if note:
            sys.stderr.write(f"spanrl ui: ready in {time.perf_counter() - t0:.1f} s\n")
        asyncio.run(_serve(make_app(data, token, lake, host=host, allow_hosts=allow_hosts), host, sock))
    except KeyboardInterrupt:
        sys.stderr.write("spanrl ui: stopped\n")
    finally:
        sock.close()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now; InputError naming --port when the port is taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port") from None
    return sock


def preparing_note(data: Path) -> str | None:
    """What the start-up computes, in words, or None when it computes nothing worth a line (an
    empty lake). The per-rollout summary is always built; the stage-2 relations only when no
    stored build exists (``spanrl.transitions.tables.current_tables``)."""
    from spanrl.transitions.tables import current_tables

    if next(lake_dir(data).rglob("*.parquet"), None) is None:
        return None
    if current_tables(data)[0]:
        return f"preparing {data} (a summary of every rollout)"
    return f"preparing {data} (a summary of every rollout; stage-2 tables in memory: no stored build yet, run `spanrl ingest`)"


async def _serve(app: web.Application, host: str, sock: socket.socket) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.SockSite(runner, sock)
    await site.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"spanrl ui: http://{shown}:{sock.getsockname()[1]}/  (Ctrl-C to stop)", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
