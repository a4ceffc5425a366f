"""OTLP/HTTP front door (aiohttp): ``POST /v1/{traces,logs,metrics}``, protobuf or JSON, gzip/deflate.

Replies in the request's content type (an empty ``Export*ServiceResponse`` on success, a
``google.rpc.Status`` on error), as the OTLP/HTTP spec and the collector do.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from typing import Any

from aiohttp import web

from spanrl.collector.decode import BadPayload, Decoded, decode_json, decode_protobuf
from spanrl.collector.limits import READ_COST, Reservation
from spanrl.collector.receiver import OFFLOAD_BYTES, Receiver, authorized
from spanrl.collector.writer import Outcome

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
ROUTES = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}
RETRY_AFTER_S = "1"
_CHUNK = 1 << 16
# google.rpc.Code for each HTTP status we send (the body of an error reply is a google.rpc.Status)
_RPC_CODE = {400: 3, 401: 16, 404: 5, 405: 12, 408: 4, 413: 8, 415: 3, 429: 8, 500: 13, 503: 14}
_OUTCOME_STATUS = {Outcome.OK: 200, Outcome.BUSY: 429, Outcome.DISK_FULL: 503,
                   Outcome.WRITE_FAILED: 503, Outcome.INTERNAL: 500}
_OUTCOME_TEXT = {
    Outcome.BUSY: "receiver queue is full; retry after the Retry-After delay",
    Outcome.DISK_FULL: "no space left on the device holding the span files; free space, then retry",
    Outcome.WRITE_FAILED: "could not write the span file; retry later",
    Outcome.INTERNAL: "internal error while writing the batch",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _status_proto(code: int, message: str) -> bytes:
    """``google.rpc.Status{code, message}`` encoded by hand (two fields; no extra dependency)."""
    out = bytearray()
    if code:
        out += b"\x08" + _varint(code)
    data = message.encode("utf-8")
    if data:
        out += b"\x12" + _varint(len(data)) + data
    return bytes(out)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _reply(status: int, content_type: str, message: str = "") -> web.Response:
    headers = {"Retry-After": RETRY_AFTER_S} if status in (429, 503) else {}
    if status == 200:
        body = b"" if content_type == PROTOBUF else b"{}"
    elif content_type == PROTOBUF:
        body = _status_proto(_RPC_CODE.get(status, 2), message)
    else:
        content_type = JSON
        body = json.dumps({"code": _RPC_CODE.get(status, 2), "message": message}).encode()
    return web.Response(status=status, body=body, content_type=content_type, headers=headers)


def _decompressor(encoding: str, first: bytes) -> zlib._Decompress | None:  # type: ignore[name-defined]
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":  # zlib-wrapped per RFC 9110; some clients send raw deflate
        zlib_header = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
    raise HttpError(415, f"unsupported Content-Encoding {encoding!r}; send gzip, deflate or none")


async def read_body(request: web.Request, encoding: str, limit: int, reservation: Reservation | None = None,
                    read_timeout_s: float = 30.0, idle_timeout_s: float = 10.0) -> bytearray:
    """Reads and decompresses incrementally, refusing as early as possible.

    413 as soon as either size passes ``limit``; 429 when ``reservation`` cannot grow by ``READ_COST``
    per decompressed byte (memory is charged as it arrives, so a slow sender holds only what it sent);
    408 when the body takes longer than ``read_timeout_s`` or pauses longer than ``idle_timeout_s``.
    """
    out = bytearray()
    raw_total = 0
    decomp = None
    started = False
    deadline = time.monotonic() + read_timeout_s
    try:
        while True:
            wait = min(idle_timeout_s, deadline - time.monotonic())
            try:
                chunk = await asyncio.wait_for(request.content.readany(), max(wait, 0.001))
            except TimeoutError:
                raise HttpError(408, f"request body not received within {read_timeout_s:g} s "
                                     f"(or paused over {idle_timeout_s:g} s); send it again") from None
            if not chunk:
                break
            raw_total += len(chunk)
            if raw_total > limit:
                raise HttpError(413, f"request body over {limit} bytes")
            if not started:
                decomp = _decompressor(encoding, chunk)
                started = True
            before = len(out)
            if decomp is None:
                out += chunk
            else:
                decomp = _inflate(decomp, chunk, out, limit)
            if reservation is not None and not reservation.grow(READ_COST * (len(out) - before)):
                raise HttpError(429, "receiver memory budget is full; retry after the Retry-After delay")
        if not started:
            _decompressor(encoding, b"")  # still refuses an unknown encoding on an empty body
        elif decomp is not None:
            out += decomp.flush()
            if not decomp.eof:
                raise HttpError(400, f"malformed {encoding} body: truncated stream")
    except zlib.error as exc:
        raise HttpError(400, f"malformed {encoding} body: {exc}") from None
    return out


def _inflate(decomp: Any, data: bytes, out: bytearray, limit: int) -> Any:
    """Appends what ``data`` inflates to; returns the decompressor for the next chunk (a new one after a
    gzip member ends: concatenated members are one body)."""
    while data:
        out += decomp.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise HttpError(413, f"decompressed body over {limit} bytes")
        if decomp.unconsumed_tail:
            data = decomp.unconsumed_tail
        elif decomp.eof and decomp.unused_data:  # concatenated gzip members
            data = decomp.unused_data
            decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            data = b""
    return decomp


def _content_type(request: web.Request) -> str:
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if ctype == JSON:
        return JSON
    raise HttpError(415, f"unsupported Content-Type {ctype!r}; send {PROTOBUF} or {JSON}")


def build_app(receiver: Receiver) -> web.Application:
    """The aiohttp application; tests run it in-process with ``aiohttp.test_utils``."""
    config = receiver.config
    decoding = asyncio.Semaphore(config.max_inflight)  # CPU: bodies are already paid for in the budget

    async def handle(request: web.Request) -> web.StreamResponse:
        reply_type = JSON
        reservation = None
        try:
            signal = ROUTES.get(request.path)
            if signal is None:
                raise HttpError(404, f"unknown path {request.path!r}; OTLP paths are {', '.join(ROUTES)}")
            if request.method != "POST":
                raise HttpError(405, "OTLP/HTTP takes POST only")
            if not authorized(request.headers.get("Authorization"), config.token):
                raise HttpError(401, "missing or wrong 'Authorization: Bearer <token>' header")
            reply_type = _content_type(request)
            encoding = request.headers.get("Content-Encoding", "").strip().lower()
            if (request.content_length or 0) > config.max_body_bytes:
                raise HttpError(413, f"request body over {config.max_body_bytes} bytes")
            reservation = receiver.budget.reserve()
            try:
                body = await read_body(request, encoding, config.max_body_bytes, reservation,
                                       config.read_timeout_s, config.idle_timeout_s)
            except HttpError:
                raise
            except Exception as exc:  # client went away or sent a broken chunked body
                raise HttpError(400, f"could not read the request body: {exc}") from None
            async with decoding:
                if len(body) > OFFLOAD_BYTES:  # keep the loop answering while a big body is parsed
                    decoded = await asyncio.get_running_loop().run_in_executor(
                        None, _decode, signal, body, reply_type)
                else:
                    decoded = _decode(signal, body, reply_type)
            del body
            outcome = await receiver.export(decoded, reservation)
            reservation = None  # the receiver owns it now
            if outcome is not Outcome.OK:
                return _refuse(receiver, outcome, reply_type)
            return _reply(200, reply_type)
        except HttpError as exc:
            receiver.reject(f"http_{exc.status}")
            response = _reply(exc.status, reply_type, exc.message)
            if exc.status == 408:
                response.force_close()  # a stalled sender: free the connection now
            return response
        finally:
            if reservation is not None:
                reservation.release()

    app = web.Application(client_max_size=config.max_body_bytes + 1)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def _decode(signal: str, body: bytearray, content_type: str) -> Decoded:
    try:
        return decode_protobuf(signal, body) if content_type == PROTOBUF else decode_json(signal, body)
    except BadPayload as exc:
        raise HttpError(400, str(exc)) from None


def _refuse(receiver: Receiver, outcome: Outcome, reply_type: str) -> web.Response:
    status = _OUTCOME_STATUS[outcome]
    receiver.reject(f"http_{status}")
    return _reply(status, reply_type, _OUTCOME_TEXT[outcome])
