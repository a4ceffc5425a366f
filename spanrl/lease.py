"""The one-writer lease of a data root on object storage (``LEASE``, docs/scale.md): created only if
absent, renewed while the command runs, expiring so a writer that died elsewhere blocks no one for
longer than ``SPANRL_LEASE_TTL_S`` (default 300 s); one that died on this machine (its pid is gone)
is taken over at once. The object-storage counterpart of a local root's ``flock``.

A ``LEASE`` that spanrl did not write (``hello``, ``[]``, even ``{}``) is refused, never taken over: it
says nothing about whether a writer holds the root, and ``{}`` read as "expired at 0" would hand the
root to this run silently. Whoever wrote it may be keeping writers out on purpose; deleting it is one
command, named in the message (exit 2).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from spanrl.errors import InputError
from spanrl.processes import pid_alive
from spanrl.storage import Conflict, ObjectStore

LEASE = "LEASE"


def lease_ttl() -> float:
    return float(os.environ.get("SPANRL_LEASE_TTL_S") or 300)


@dataclass
class Lease:
    """This run's hold on ``LEASE``: renewed in the background; ``lost`` once a renewal fails."""

    store: ObjectStore
    body: dict[str, Any]
    etag: str
    lost: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._renew_loop, name="spanrl-lease", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(max(lease_ttl() / 3, 0.05)):
            try:
                self.renew()
            except Exception as exc:  # noqa: BLE001 - recorded; the publish step refuses on it
                self.lost = self.lost or f"renewing the lease failed: {exc}"
                return

    def renew(self) -> None:
        body = {**self.body, "expires_at": time.time() + lease_ttl()}
        try:
            self.etag = self.store.put(LEASE, json.dumps(body).encode(), if_match=self.etag)
            self.body = body
        except Conflict:
            self.lost = "another writer took the lease over (this run was presumed dead)"
            raise

    def check(self) -> None:
        """Refuse to publish without the lease (renewed just now, so it is ours for another TTL)."""
        if self.lost is None:
            try:
                self.renew()
            except Conflict:
                pass
        if self.lost is not None:
            raise InputError(f"{self.store.url}: {self.lost}; nothing was published, the root is unchanged. "
                             "Re-run the command.")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.lost is None:
            current = self.store.get(LEASE)
            if current is not None and _token(current.body) == self.body["token"]:
                self.store.delete(LEASE)


_FIELDS = {"token": str, "host": str, "pid": int, "command": str, "acquired_at": (int, float),
           "expires_at": (int, float)}


def _token(body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value.get("token") if isinstance(value, dict) else None


def _holder(store: ObjectStore, body: bytes) -> dict[str, Any]:
    """The lease another run holds; an InputError naming ``LEASE`` when spanrl did not write it."""
    try:
        other = json.loads(body)
    except ValueError:
        other = None
    if isinstance(other, dict) and all(isinstance(other.get(k), t) and not isinstance(other.get(k), bool)
                                       for k, t in _FIELDS.items()):
        return other
    shown = repr(body[:60].decode("utf-8", "replace")) + ("..." if len(body) > 60 else "")
    raise InputError(
        f"{store.url}/{LEASE} is not a spanrl lease (it holds {shown}); spanrl writes the holder's token, host, "
        "pid, command and expiry there, so something else wrote it, and whether a writer holds the root cannot be "
        f"told. Nothing was written. If no spanrl command is writing {store.url}, delete that object "
        f"(e.g. `aws s3 rm {store.url}/{LEASE}`) and run the command again.")


def acquire_lease(store: ObjectStore, command: str) -> Lease:
    """Create ``LEASE`` (or take over an expired one, or one whose holder on this machine is gone);
    an InputError naming the holder when a live writer has it."""
    now = time.time()
    body = {"token": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid(), "command": command,
            "acquired_at": now, "expires_at": now + lease_ttl()}
    data = json.dumps(body).encode()
    for _ in range(3):
        try:
            lease = Lease(store, body, store.put(LEASE, data, if_none_match=True))
            break
        except Conflict:
            held = store.get(LEASE)
            if held is None:
                continue  # released between our two calls: try again
            other = _holder(store, held.body)
            dead_here = other.get("host") == body["host"] and not pid_alive(int(other.get("pid", -1)))
            if other.get("expires_at", 0) < now or dead_here:
                try:
                    lease = Lease(store, body, store.put(LEASE, data, if_match=held.etag))
                    break
                except Conflict:
                    continue
            since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(other.get("acquired_at", 0)))
            until = time.strftime("%H:%M:%S UTC", time.gmtime(other.get("expires_at", 0)))
            raise InputError(
                f"{store.url} is being written by `{other.get('command')}` (host {other.get('host')}, pid "
                f"{other.get('pid')}) since {since}; only one writer at a time. Wait for it to finish; if that "
                f"process is gone, its lease expires at {until} (renewed while it runs) and the next run takes over.") from None
    else:
        raise InputError(f"{store.url}: could not take the lease (it changed three times while trying); re-run")
    lease.start()
    return lease
