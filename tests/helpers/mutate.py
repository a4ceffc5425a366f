"""Mutation cases over real recordings (issue 42): each case is a copy of one recorded OTLP/JSON run with
ONE attribute or span field changed, and ids of its own, so that many cases share one lake and one
ingest (a case costs a few KB, not a build).

    cases = make_cases(recordings(), n=50, seed=7)      # [Case], deterministic for a seed
    write_cases(cases, data / "otel")                   # one span file (and one log file) per batch

A case's trace ids, span ids, response ids (``chatcmpl-…``), tool-call ids (``call_…``) and rollout ids
are rewritten with the case number, so no two cases merge as twins or share a rollout; only the mutated
value differs from the recording. The mutations are what an instrumentation somewhere may send: a key
dropped, emptied, of another type or another JSON shape, JSON text truncated, a key twice; span ids
empty or self-parented; odd status codes and kinds; times as text.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

ROOT = Path(__file__).resolve().parents[2]
# recorded runs of real instrumentations (each folder's README says how they were made)
RECORDING_DIRS = ["tests/data/ingest/captured", "tests/data/ingest/captured_litellm", "tests/data/ingest/captured_openlit",
                  "tests/data/ingest/captured_multi", *sorted(f"tests/data/ingest/mixes/{p.name}" for p in
                                                          (ROOT / "tests/data/ingest/mixes").glob("*/"))]
AIR_CORPUS = ROOT / "tests/data/air_corpus/traces.jsonl.zst"

ATTRIBUTE_OPS = ["drop", "empty", "to_int", "to_double", "to_bool", "to_array", "to_kvlist", "json_null",
                 "json_list", "json_string", "json_object", "truncate", "duplicate_key", "not_json", "nested", "nested",
                 "nested"]
READ_KEYS = re.compile(r"message|input|output|prompt|completion|tool|argument|json|usage|token|response|finish|"
                       r"reward|rollout|task|model|kind|system|instructions|events|span\\.type|value", re.I)
SPAN_OPS = ["empty_trace_id", "empty_span_id", "self_parent", "dangling_parent", "status_code_odd",
            "status_code_text", "kind_odd", "kind_text", "time_text", "end_before_start", "name_missing",
            "event_attr_odd"]


@dataclass
class Case:
    """One mutated copy of a recording: its OTLP request lines and what was changed where."""

    number: int
    recording: str
    op: str
    target: str  # "<span name> <span id>: <attribute key>" or "<span name> <span id>: <field>"
    trace_id: str  # the mutated span's trace id after the rewrite ('' when the mutation emptied it)
    span_id: str  # the mutated span's id after the rewrite ('' when the mutation emptied it)
    key: str | None  # the mutated attribute key, None for a span field
    value: Any  # the mutated attribute's new OTLP value (None: dropped, or a span field)
    trace_lines: list[dict[str, Any]]
    log_lines: list[dict[str, Any]]


def _lines(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".zst":
        text = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read().decode()
    else:
        text = path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def recordings() -> dict[str, tuple[list[dict], list[dict]]]:
    """name -> (trace request lines, log request lines) of every recording that is present."""
    out: dict[str, tuple[list[dict], list[dict]]] = {}
    for rel in RECORDING_DIRS:
        folder = ROOT / rel
        if not folder.is_dir():
            continue
        traces = [x for f in sorted(folder.glob("*.jsonl")) for x in _lines(f) if "resourceSpans" in x]
        logs = [x for f in sorted(folder.glob("*.jsonl")) for x in _lines(f) if "resourceLogs" in x]
        if traces:
            out[folder.name] = (traces, logs)
    if AIR_CORPUS.is_file():  # one recording per run (trace) of the corpus: a case copies one run, not all 20
        for trace_id, lines in _by_trace([x for x in _lines(AIR_CORPUS) if "resourceSpans" in x]).items():
            out[f"air_corpus:{trace_id[:8]}"] = (lines, [])
    return out


def _by_trace(lines: list[dict]) -> dict[str, list[dict]]:
    """The request lines split per trace id (each keeps its resource and scope around its spans)."""
    out: dict[str, list[dict]] = {}
    for req in lines:
        for rs in req.get("resourceSpans") or []:
            for ss in rs.get("scopeSpans") or []:
                for sp in ss.get("spans") or []:
                    part = {**rs, "scopeSpans": [{**ss, "spans": [sp]}]}
                    out.setdefault(sp.get("traceId", ""), []).append({"resourceSpans": [part]})
    return out


def _spans(lines: list[dict]) -> list[dict]:
    return [sp for req in lines for rs in req.get("resourceSpans") or [] for ss in rs.get("scopeSpans") or []
            for sp in ss.get("spans") or []]


def _hexid(seed: str, n_bytes: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[: 2 * n_bytes]


ROLLOUT_KEYS = {"spanrl.rollout_id", "agentlightning.rollout_id", "spanrl.task_id", "session.id"}
ID_TOKENS = re.compile(r"(?<![A-Za-z0-9_])(chatcmpl-[A-Za-z0-9_-]+|call_[A-Za-z0-9_]+|toolu_[A-Za-z0-9]+|resp_[A-Za-z0-9]+|"
                       r"msg_[A-Za-z0-9]+|r-[A-Za-z0-9_.,-]+|rollout-[A-Za-z0-9_-]+)")


def _rewrite_ids(lines: list[dict], case: int) -> list[dict]:
    """The lines with every trace/span id and every response, tool-call and rollout id made the case's own."""
    text = json.dumps(lines)
    ids = {m for m in re.findall(r'"(?:traceId|spanId|parentSpanId)": "([0-9a-fA-F]+)"', text) if m}
    for old in sorted(ids, key=len, reverse=True):
        text = text.replace(old, _hexid(f"{case}:{old}", len(old) // 2))
    text = ID_TOKENS.sub(lambda m: f"{m.group(0)}c{case}", text)
    out = json.loads(text)
    for req in out:  # rollout and task ids named by attribute, whatever their text
        for rs in req.get("resourceSpans") or []:
            for attrs in [(rs.get("resource") or {}).get("attributes") or []] + [
                    sp.get("attributes") or [] for ss in rs.get("scopeSpans") or [] for sp in ss.get("spans") or []]:
                for kv in attrs:
                    if kv.get("key") in ROLLOUT_KEYS and "stringValue" in (kv.get("value") or {}):
                        kv["value"]["stringValue"] += f"-c{case}"
    return out


def _value(v: dict[str, Any]) -> Any:
    """An OTLP AnyValue's payload (the first of its keys)."""
    return next(iter(v.values())) if v else None


def _mutate_attribute(attrs: list[dict], i: int, op: str, rng: random.Random) -> None:
    kv = attrs[i]
    raw = _value(kv.get("value") or {})
    text = raw if isinstance(raw, str) else json.dumps(raw)
    new: dict[str, Any] | None
    if op == "drop":
        del attrs[i]
        return
    new = {
        "empty": {"stringValue": ""},
        "to_int": {"intValue": str(rng.randint(-5, 10**12))},
        "to_double": {"doubleValue": rng.choice([0.5, -1.0, 1e308])},
        "to_bool": {"boolValue": rng.choice([True, False])},
        "to_array": {"arrayValue": {"values": [{"stringValue": text[:40]}, {"intValue": "3"}]}},
        "to_kvlist": {"kvlistValue": {"values": [{"key": "x", "value": {"stringValue": text[:40]}}]}},
        "json_null": {"stringValue": "null"},
        "json_list": {"stringValue": "[]"},
        "json_string": {"stringValue": json.dumps(text[:30])},
        "json_object": {"stringValue": "{}"},
        "truncate": {"stringValue": text[: max(1, len(text) // 2)]},
        "not_json": {"stringValue": "{not json" + text[:10]},
    }.get(op, kv.get("value"))
    if op == "nested":  # one key inside JSON text: dropped, emptied, null, a number, a list, cut short
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        holders = _dicts(doc)
        if holders:
            d = rng.choice(holders)
            k = rng.choice(sorted(d))
            how = rng.choice(["drop", "empty", "null", "number", "list", "cut", "object"])
            if how == "drop":
                del d[k]
            else:
                d[k] = {"empty": "", "null": None, "number": 7, "list": [], "object": {},
                        "cut": json.dumps(d[k])[: max(1, len(json.dumps(d[k])) // 2)]}[how]
            kv["value"] = {"stringValue": json.dumps(doc)}
            return
        new = {"stringValue": text[: max(1, len(text) // 2)]}
    if op == "duplicate_key":
        attrs.insert(i + 1, {"key": kv["key"], "value": {"stringValue": "{\"dup\": [1"}})
        return
    kv["value"] = new


def _dicts(doc: Any) -> list[dict]:
    """Every JSON object inside ``doc`` that has a key (depth first)."""
    out: list[dict] = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out += [x] if x else []
            stack += list(x.values())
        elif isinstance(x, list):
            stack += x
    return out


def _mutate_span(sp: dict[str, Any], op: str, rng: random.Random) -> None:
    if op == "empty_trace_id":
        sp["traceId"] = ""
    elif op == "empty_span_id":
        sp["spanId"] = ""
    elif op == "self_parent":
        sp["parentSpanId"] = sp.get("spanId", "")
    elif op == "dangling_parent":
        sp["parentSpanId"] = _hexid(str(rng.random()), 8)
    elif op == "status_code_odd":
        sp["status"] = {"code": rng.choice([7, -1, 99]), "message": rng.choice(["", "x" * 50])}
    elif op == "status_code_text":
        sp["status"] = {"code": rng.choice(["STATUS_CODE_ERROR", "boom", ""])}
    elif op == "kind_odd":
        sp["kind"] = rng.choice([0, 9, -3])
    elif op == "kind_text":
        sp["kind"] = rng.choice(["SPAN_KIND_CLIENT", "weird", ""])
    elif op == "time_text":
        sp["startTimeUnixNano"] = rng.choice(["", "yesterday", "-5"])
    elif op == "end_before_start":
        sp["endTimeUnixNano"] = "1"
    elif op == "name_missing":
        sp.pop("name", None)
    elif op == "event_attr_odd":
        sp.setdefault("events", []).append({"timeUnixNano": "x", "name": "",
                                            "attributes": [{"key": "exception.message", "value": {"intValue": "1"}}]})


def make_cases(recs: dict[str, tuple[list[dict], list[dict]]], n: int, seed: int, start: int = 0) -> list[Case]:
    """``n`` cases (numbers ``start`` ..), each one mutation of a recording picked by ``seed``."""
    rng = random.Random(seed)
    families = [sorted(k for k in recs if not k.startswith("air_corpus:")),
                sorted(k for k in recs if k.startswith("air_corpus:"))]
    families = [f for f in families if f]
    cases = []
    for number in range(start, start + n):  # the recorded folders and the corpus's runs in turn
        family = families[number % len(families)]
        name = family[(number // len(families)) % len(family)]
        traces, logs = recs[name]
        lines = _rewrite_ids(copy.deepcopy(traces), number)
        spans = _spans(lines)
        with_attrs = [s for s in spans if s.get("attributes")]
        sp = rng.choice(with_attrs if with_attrs and rng.random() < 0.75 else spans)
        label = f"{sp.get('name', '')} {sp.get('spanId', '')}"
        if sp in with_attrs and rng.random() < 0.8:
            keys = [a.get("key", "") for a in sp["attributes"]]
            read = [j for j, k in enumerate(keys) if READ_KEYS.search(k)]  # what some convention parses
            i = rng.choice(read) if read and rng.random() < 0.7 else rng.randrange(len(keys))
            key, op = sp["attributes"][i]["key"], rng.choice(ATTRIBUTE_OPS)
            _mutate_attribute(sp["attributes"], i, op, rng)
            target = f"{label}: {key}"
            value = sp["attributes"][i].get("value") if op != "drop" else None
        else:
            key, op, value = None, rng.choice(SPAN_OPS), None
            _mutate_span(sp, op, rng)
            target = f"{label}: {op}"
        cases.append(Case(number, name, op, target, sp.get("traceId", ""), sp.get("spanId", ""), key, value, lines,
                          _rewrite_ids(copy.deepcopy(logs), number)))
    return cases


def write_cases(cases: list[Case], otel: Path, name: str = "mutated") -> dict[int, range]:
    """Every case's lines into ``otel/`` (one traces and one logs span file), in case order; returns each
    case's line numbers (1-based) in the traces file, to find its rejects."""
    otel.mkdir(parents=True, exist_ok=True)
    lines: dict[int, range] = {}
    n = 0
    with open(otel / f"traces-{name}.jsonl", "w") as t, open(otel / f"logs-{name}.jsonl", "w") as lg:
        for case in cases:
            for line in case.trace_lines:
                t.write(json.dumps(line, separators=(",", ":")) + "\n")
            lines[case.number] = range(n + 1, n + 1 + len(case.trace_lines))
            n += len(case.trace_lines)
            for line in case.log_lines:
                lg.write(json.dumps(line, separators=(",", ":")) + "\n")
    return lines


def _shift_times(value: Any, ns: int) -> None:
    """Every ``*UnixNano`` time in an OTLP request moved on by ``ns``, in place."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, v in items:
        if isinstance(key, str) and key.endswith("UnixNano") and v not in (None, "", "0", 0):
            value[key] = str(int(v) + ns)
        else:
            _shift_times(v, ns)


def write_copies(otel: Path, copies: int, name: str = "copies", gap_ns: int = 60 * 10**9) -> list[Path]:
    """``copies`` unmutated copies of every recording into ``otel/`` (one traces and one logs span file): a
    night of real frameworks' traffic at any size. Each copy has ids of its own (``_rewrite_ids``) and its
    clock moved on by ``gap_ns`` per copy, so no two copies overlap in time or pass for one call seen twice."""
    otel.mkdir(parents=True, exist_ok=True)
    files = [otel / f"traces-{name}.jsonl", otel / f"logs-{name}.jsonl"]
    recs = recordings()
    with open(files[0], "w") as t, open(files[1], "w") as lg:
        for c in range(copies):
            for traces, logs in recs.values():
                for out, lines in ((t, traces), (lg, logs)):
                    for line in _rewrite_ids(copy.deepcopy(lines), c):
                        _shift_times(line, c * gap_ns)
                        out.write(json.dumps(line, separators=(",", ":")) + "\n")
    return files


def spans_per_copy() -> int:
    """How many spans one copy of every recording holds (``write_copies``)."""
    return sum(len(_spans(traces)) for traces, _ in recordings().values())
