"""``spanrl serve --temperature T`` samples at T whatever the request asks, and its span says so.

Rollout groups need diversity: an agent that sends temperature 0 would give N identical samples.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.errors import InputError
from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model

HELLO = [{"role": "user", "content": "Tell me a story about a cat."}]


def test_forced_temperature_overrides_the_request(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    config = ServeConfig(model=make_tiny_model(tmp_path / "m"), data=tmp_path / "d", port=0, max_tokens=12,
                         device="cpu", temperature=1.5)
    running = serve_in_background(config, span_exporter=exporter)
    try:
        client = openai.OpenAI(base_url=running.url + "/v1", api_key="x", max_retries=0, timeout=60)
        texts = {client.chat.completions.create(model="m", messages=HELLO, temperature=0, max_tokens=12)
                 .choices[0].message.content for _ in range(4)}
    finally:
        running.stop()
    assert len(texts) > 1, "temperature 0 requests were answered greedily: the forced temperature was ignored"
    temps = {s.attributes.get("gen_ai.request.temperature") for s in exporter.get_finished_spans()}
    assert temps == {1.5}


def test_temperature_out_of_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--temperature"):
        ServeConfig(model=tmp_path, temperature=3.0)
