"""``spanrl serve`` as a real subprocess exporting its spans to the embedded collector (the demo's set-up)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai

from tests.helpers.collector import running_collector
from tests.helpers.tiny_model import make_tiny_model

READY = re.compile(r"on (http://\S+)/v1")


def _attr(span: dict, key: str):
    for item in span.get("attributes", []):
        if item["key"] == key:
            return item["value"]
    return None


def _int_list(value: dict) -> list[int]:
    return [int(v["intValue"]) for v in value["arrayValue"]["values"]]


def test_bad_model_path_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "spanrl", "serve", "--model", str(tmp_path / "nope"),
                           "--data", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no config.json" in proc.stderr


def test_serve_subprocess_spans_reach_the_collector(tmp_path: Path) -> None:
    model = make_tiny_model(tmp_path / "tiny-chat")
    data = tmp_path / "data"
    with running_collector(data) as ep:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ep.http}
        proc = subprocess.Popen([sys.executable, "-m", "spanrl", "serve", "--model", str(model), "--data", str(data),
                                 "--port", "0", "--max-tokens", "5", "--device", "cpu"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            url, log = None, []
            deadline = time.monotonic() + 120
            while url is None and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line and proc.poll() is not None:
                    break
                log.append(line)
                match = READY.search(line)
                url = match.group(1) if match else None
            assert url, "".join(log)
            client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
            resp = client.chat.completions.create(model="tiny-chat", messages=[{"role": "user", "content": "hi"}],
                                                  extra_body={"return_token_ids": True})
            token_ids = resp.model_dump()["choices"][0]["token_ids"]
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0, proc.stdout.read()
    spans = []
    for path in sorted((data / "otel").glob("traces*.jsonl")):
        for line in path.read_text().splitlines():
            for rs in json.loads(line).get("resourceSpans", []):
                service = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}["service.name"]["stringValue"]
                for ss in rs["scopeSpans"]:
                    spans += [(service, s) for s in ss["spans"]]
    mine = [(svc, s) for svc, s in spans if (_attr(s, "gen_ai.response.id") or {}).get("stringValue") == resp.id]
    assert len(mine) == 1, spans
    service, span = mine[0]
    assert service == "spanrl-serve" and span["name"] == "chat tiny-chat"
    assert _int_list(_attr(span, "spanrl.response_token_ids")) == token_ids
    assert len(_int_list(_attr(span, "spanrl.prompt_token_ids"))) == resp.usage.prompt_tokens
