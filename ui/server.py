"""Run the web app: warm the lake once, bind, print the URL, serve until Ctrl-C."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys
import time
from pathlib import Path

from aiohttp import web

from spanrl.errors import InputError
from spanrl.ui.app import make_app
from spanrl.ui.data import Lake


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def run_ui(data: Path, host: str, port: int, token: str | None, allow_hosts: tuple[str, ...] = ()) -> None:
    """``spanrl ui``: InputError when the data root does not exist; a warning when it is served
    beyond this machine without a token."""
    if not data.is_dir():
        raise InputError(f"{data}: no such data root; pass --data DIR (the folder `spanrl ingest` wrote)")
    if token is None and not _is_loopback(host):
        sys.stderr.write(f"warning: serving {data} on {host} without --token: anyone who reaches this port "
                         "can read every prompt and answer in the lake\n")
    t0 = time.perf_counter()
    sys.stderr.write(f"spanrl ui: preparing {data} (stage-2 tables held in memory until ingest stores them) ...\n")
    lake = Lake(data)
    sys.stderr.write(f"spanrl ui: ready in {time.perf_counter() - t0:.1f} s\n")
    try:
        asyncio.run(_serve(make_app(data, token, lake, host=host, allow_hosts=allow_hosts), host, port))
    except KeyboardInterrupt:
        sys.stderr.write("spanrl ui: stopped\n")


async def _serve(app: web.Application, host: str, port: int) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port") from None
    site = web.SockSite(runner, sock)
    await site.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"spanrl ui: http://{shown}:{sock.getsockname()[1]}/  (Ctrl-C to stop)", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
