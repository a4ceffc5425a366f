"""``spanrl serve`` under hostile requests (issue 9, item 13): malformed bodies are 400, never 500;
``--token`` guards every route but /health; load_lora_adapter loads only DATA/adapters/* unless
``--allow-any-adapter-path``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from spanrl.serve.api import ApiError
from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model
from tests.serve.test_server import _write_adapter

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HELLO = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-chat")


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    running = serve_in_background(ServeConfig(model=model_dir, data=data, port=0, max_tokens=4, device="cpu",
                                              token=TOKEN))
    yield running, data
    running.stop()


def _chat(url: str, body: bytes | dict, headers: dict | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url + "/v1/chat/completions", content=content, timeout=60,
                      headers={"Content-Type": "application/json", **AUTH, **(headers or {})})


@pytest.mark.parametrize("body", [
    b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # RecursionError inside json.loads
    json.dumps({"model": "tiny-chat", "messages": HELLO, "metadata": json.loads("[" * 500 + "]" * 500)}).encode(),
    json.dumps({"messages": [{"role": "user", "content": json.loads("[" * 300 + "]" * 300)}]}).encode(),
], ids=["100k levels", "500 levels in metadata", "300 levels in content"])
def test_deeply_nested_bodies_are_400(server, body: bytes) -> None:
    res = _chat(server[0].url, body)
    assert res.status_code == 400, res.text
    assert res.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("tool_calls", [["not an object"], [{"function": "add"}], [{"function": {"arguments": "{}"}}],
                                        "add", [None]])
def test_malformed_tool_calls_are_400(server, tool_calls) -> None:
    messages = [*HELLO, {"role": "assistant", "content": None, "tool_calls": tool_calls},
                {"role": "tool", "tool_call_id": "c1", "content": "3"}]
    res = _chat(server[0].url, {"messages": messages})
    assert res.status_code == 400 and "tool_calls" in res.json()["error"]["message"], res.text


def test_a_well_formed_request_still_answers(server) -> None:
    res = _chat(server[0].url, {"messages": HELLO, "max_tokens": 2})
    assert res.status_code == 200, res.text


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic s3cret", f"Bearer {TOKEN}x", "Bearer sécret"])
def test_token_guards_every_route_but_health(server, header: str | None) -> None:
    url = server[0].url
    headers = {} if header is None else {"Authorization": header.encode("utf-8")}  # raw UTF-8 bytes on the wire
    assert httpx.get(url + "/v1/models", headers=headers).status_code == 401
    assert httpx.post(url + "/v1/chat/completions", json={"messages": HELLO}, headers=headers).status_code == 401
    assert httpx.post(url + "/v1/load_lora_adapter", json={}, headers=headers).status_code == 401
    assert httpx.get(url + "/health").status_code == 200
    assert httpx.get(url + "/v1/models", headers=AUTH).status_code == 200


def test_adapters_load_only_from_the_data_roots_adapters(server, model_dir, tmp_path) -> None:
    running, data = server
    outside = _write_adapter(model_dir, tmp_path / "outside", seed=1)
    inside = _write_adapter(model_dir, data / "adapters" / "cycle-0001", seed=2)
    sneaky = data / "adapters" / "link"
    sneaky.symlink_to(outside)  # a symlink inside pointing outside is outside
    for path in (outside, sneaky, Path("/etc")):
        res = httpx.post(running.url + "/v1/load_lora_adapter", headers=AUTH, timeout=60,
                         json={"lora_name": "x", "lora_path": str(path)})
        assert res.status_code == 403 and "--allow-any-adapter-path" in res.text, res.text
    res = httpx.post(running.url + "/v1/load_lora_adapter", headers=AUTH, timeout=60,
                     json={"lora_name": "mine", "lora_path": str(inside)})
    assert res.status_code == 200, res.text


def test_allow_any_adapter_path_lifts_the_restriction(tmp_path) -> None:
    from spanrl.serve.api import check_adapter_path

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    with pytest.raises(ApiError):
        check_adapter_path(str(folder), tmp_path / "data" / "adapters", allow_any=False)
    assert check_adapter_path(str(folder), tmp_path / "data" / "adapters", allow_any=True) == folder.resolve()
