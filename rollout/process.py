"""One agent process per attempt: its own process group and its own environment.

The command is run as given (no shell); ``{input}`` and ``{task_id}`` in its arguments are replaced.
The input is also on stdin (from a file, so an agent that never reads it cannot block us) and in
``SPANRL_TASK_INPUT``. The OTel and OpenAI variables are set for this process only: the endpoint
together with its protocol, general and per signal (``opentelemetry-distro`` defaults to gRPC, and a
per-signal value the user left in the environment wins over a general one: either would send every
span to a port that does not speak it, lost without a word). A timeout sends
SIGTERM to the whole group (the SDK's exit hooks may still flush spans), then SIGKILL after a grace
period; whatever the agent left running is killed when it exits, in its group or not (``reaper``).
Its stdout and stderr are read as they come and kept bounded (``capture``: head and tail).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import shlex
import signal
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

from spanrl.rollout.capture import CHUNK, capture
from spanrl.rollout.reaper import kill_attempt
from spanrl.rollout.runs import FAILED, OK, TIMEOUT, Attempt
from spanrl.rollout.tasks import Task

STDERR_TAIL_BYTES = 2000
EXIT_POLL_S = 0.05  # how often a running attempt's exit is looked for


def substitute(command: list[str], task: Task) -> list[str]:
    return [a.replace("{input}", task.input).replace("{task_id}", task.task_id) for a in command]


def resource_attributes(existing: str | None, rollout_id: str, task_id: str) -> str:
    """``OTEL_RESOURCE_ATTRIBUTES`` with ours appended (percent-encoded, as the spec's W3C-baggage
    format requires); later keys win in the SDKs, so ours override a stale value the user set."""
    ours = f"spanrl.rollout_id={quote(rollout_id, safe='')},spanrl.task_id={quote(task_id, safe='')}"
    existing = (existing or "").strip().strip(",")
    return f"{existing},{ours}" if existing else ours


HTTP_PROTOCOLS = ("http/protobuf", "http/json")
OTLP_PROTOCOLS = (*HTTP_PROTOCOLS, "grpc")
GRPC_PORT = 4317  # the OTLP/gRPC port of every collector's default config


def otlp_protocol(endpoint: str, given: str | None) -> str:
    """The protocol of an OTLP endpoint: ``given`` (``--otlp-protocol``), else gRPC when the URL's
    port is 4317 (OTLP's gRPC port), else ``http/protobuf`` (4318 and anything else)."""
    if given:
        return given
    return "grpc" if urlsplit(endpoint).port == GRPC_PORT else "http/protobuf"


def otlp_env(endpoint: str, protocol: str) -> dict[str, str]:
    """The OTel exporter variables that send traces and logs to ``endpoint`` over ``protocol``: the
    general ones and the per-signal ones (which win in every SDK when set, so a stale value the user
    exported cannot send the spans elsewhere or in another protocol). Metrics keep the user's own
    per-signal settings (the collector drops metrics anyway)."""
    base = endpoint.rstrip("/")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    for kind in ("TRACES", "LOGS"):
        env[f"OTEL_EXPORTER_OTLP_{kind}_PROTOCOL"] = protocol
        # per-signal HTTP endpoints are used as given (no /v1/<signal> appended); gRPC ones are host:port
        env[f"OTEL_EXPORTER_OTLP_{kind}_ENDPOINT"] = (base if protocol == "grpc"
                                                      else f"{base}/v1/{kind.lower()}")
    return env


OPENAI_URL_VARS = ("OPENAI_BASE_URL", "OPENAI_API_BASE")  # the openai SDK; LangChain, LiteLLM, CrewAI
ROOT_URL_VARS = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE")  # the anthropic SDK (it appends /v1); LiteLLM


def base_url_env(policy_url: str) -> dict[str, str]:
    """The base-URL variables the common SDKs read, all naming the policy: the OpenAI ones get the
    ``/v1`` URL, the Anthropic ones its root (the Anthropic SDK appends ``/v1/messages``); when the
    URL does not end in ``/v1`` its root is unknown and the Anthropic ones are left as they are."""
    env = dict.fromkeys(OPENAI_URL_VARS, policy_url)
    url = policy_url.rstrip("/")
    if url.endswith("/v1"):
        env.update(dict.fromkeys(ROOT_URL_VARS, url.removesuffix("/v1")))
    return env


def agent_env(base: dict[str, str], att: Attempt, otlp: str, policy_url: str,
              protocol: str = "http/protobuf", run_id: str | None = None) -> dict[str, str]:
    env = dict(base)
    env.update(otlp_env(otlp, protocol))
    env["OTEL_RESOURCE_ATTRIBUTES"] = resource_attributes(base.get("OTEL_RESOURCE_ATTRIBUTES"),
                                                          att.rollout_id, att.task.task_id)
    env.update(base_url_env(policy_url))
    env.setdefault("OPENAI_API_KEY", "unused")  # the openai SDK refuses to start without one; local servers ignore it
    env.setdefault("ANTHROPIC_API_KEY", "unused")  # the anthropic SDK refuses to send a request without one
    env["SPANRL_TASK_INPUT"] = att.task.input
    env["SPANRL_TASK_ID"] = att.task.task_id
    env["SPANRL_ROLLOUT_ID"] = att.rollout_id
    # every descendant inherits these, setsid or not: how the reaper finds what an attempt left behind
    env["SPANRL_RUN_ID"] = run_id or att.rollout_id
    env["SPANRL_RUNNER_PID"] = str(os.getpid())
    return env


async def run_attempt(att: Attempt, command: list[str], env: dict[str, str], paths: tuple[Path, Path, Path],
                      timeout_s: float, kill_grace_s: float) -> tuple[int, int]:
    """Run the agent once; fills ``att`` (status, exit code, stderr tail, output hash and sizes);
    (start_ns, end_ns). Its output is read as it comes and kept bounded (``capture``); when it ends,
    its group and every process tagged with its rollout id (``setsid`` descendants too) are killed."""
    stdin_path, out_path, err_path = paths
    stdin_path.write_text(att.task.input)
    start_ns, t0 = time.time_ns(), time.monotonic()
    with open(stdin_path, "rb") as fin:
        try:
            proc = await asyncio.create_subprocess_exec(*substitute(command, att.task), stdin=fin,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE, env=env,
                                                        start_new_session=True, limit=CHUNK)
        except OSError as exc:  # not found, not executable: a failed attempt, not a crash of the runner
            err_path.write_bytes(f"spanrl rollout: cannot start {command[0]!r}: {exc}\n".encode())
            out_path.write_bytes(b"")
            att.status, att.exit_code = FAILED, 127
            proc = None
        if proc is not None:
            assert proc.stdout is not None and proc.stderr is not None
            readers = asyncio.gather(capture(proc.stdout, out_path), capture(proc.stderr, err_path))
            try:
                att.exit_code = await asyncio.wait_for(_exited(proc), timeout_s)
                att.status = OK if att.exit_code == 0 else FAILED
            except TimeoutError:
                att.status = TIMEOUT
                att.exit_code = await _kill_group(proc, kill_grace_s)
            finally:
                _signal_group(proc.pid, signal.SIGKILL)  # leftovers the agent started in its group
                att.extra["descendants_killed"] = kill_attempt(att.rollout_id)  # and those that left it
            try:  # the pipes close once every holder is dead; a holder that escaped the tags cannot block us
                out, err = await asyncio.wait_for(readers, max(kill_grace_s, 1.0))
            except TimeoutError:
                readers.cancel()
                out = err = None
            if out is not None and err is not None:
                att.output_sha256 = out.sha256
                att.extra.update(stdout_bytes=out.total, stdout_kept=out.kept, stderr_bytes=err.total,
                                 stderr_kept=err.kept)
    att.duration_s = time.monotonic() - t0
    att.stderr_tail = _tail(err_path)
    if att.output_sha256 is None:
        att.output_sha256 = hashlib.sha256(out_path.read_bytes() if out_path.is_file() else b"").hexdigest()
    return start_ns, time.time_ns()


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The agent's exit code once its process has exited. Not ``proc.wait()``: asyncio resolves that
    only when every pipe is closed too, and a child that left the process group (``setsid``) still
    holds them, so the attempt would run into its timeout; the reaper kills that child afterwards."""
    while proc.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)
    return proc.returncode


async def _kill_group(proc: asyncio.subprocess.Process, grace_s: float) -> int:
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        return await asyncio.wait_for(_exited(proc), grace_s)
    except TimeoutError:
        _signal_group(proc.pid, signal.SIGKILL)
        return await _exited(proc)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path) -> str:
    if not path.is_file():
        return ""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - STDERR_TAIL_BYTES))
        return fh.read().decode(errors="replace")


async def run_scorer(score_cmd: str, task: Task, output: str, timeout_s: float) -> tuple[float | None, str | None]:
    """(score, None) or (None, why): the scorer reads ``{"task": ..., "output": ...}`` and prints a number."""
    payload = json.dumps({"task": task.line, "output": output}).encode()
    try:
        proc = await asyncio.create_subprocess_exec(*shlex.split(score_cmd), stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    start_new_session=True)
    except (OSError, ValueError) as exc:
        return None, f"cannot start the scorer: {exc}"
    try:
        out, err = await asyncio.wait_for(proc.communicate(payload), timeout_s)
    except TimeoutError:
        _signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        return None, f"the scorer timed out after {timeout_s:g}s"
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip()[-300:]
        return None, f"the scorer exited with {proc.returncode}: {tail}"
    text = out.decode(errors="replace").strip()
    try:
        value = float(text.splitlines()[-1]) if text else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return None, f"the scorer printed {text[-100:]!r}, not a finite number"
    return value, None
