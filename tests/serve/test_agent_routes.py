"""``spanrl serve --agent-adapter``: each agent's requests get its own adapter chain's LATEST
(DATA/adapters/agents/<agent>/, what ``spanrl train --agent`` writes), by model name or by the
``x-spanrl-agent`` header; a moved LATEST is picked up by the next request (issue 29)."""

from __future__ import annotations

import shutil

import httpx
import pytest

from spanrl.layout import agent_adapters_dir
from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model
from tests.serve.test_server import _point_latest, _write_adapter

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    model = make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-chat")
    data = tmp_path_factory.mktemp("data")
    adapter = _write_adapter(model, data / "one-adapter", 0)  # the routes, not the weights, are under test
    for agent in ("router", "solver"):
        root = agent_adapters_dir(data, agent)
        shutil.copytree(adapter, root / "c1")
        _point_latest(root, "c1")
    config = ServeConfig(model=model, data=data, port=0, max_tokens=4, device="cpu",
                         agent_adapters=("solver", "gpt-4o-mini=router"))
    running = serve_in_background(config)
    yield running, data
    running.stop()


def _ask(url: str, model: str, headers: dict | None = None) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", json={"model": model, "messages": HELLO, "max_tokens": 4},
                      headers=headers or {}, timeout=60)


def test_requests_are_routed_to_their_agents_adapter(served) -> None:
    running, _ = served
    used = {m: _ask(running.url, m).headers["x-spanrl-adapter"] for m in ("solver", "gpt-4o-mini", "tiny-chat")}
    assert used == {"solver": "agent:solver", "gpt-4o-mini": "agent:router", "tiny-chat": "base"}
    assert _ask(running.url, "tiny-chat", {"x-spanrl-agent": "solver"}).headers["x-spanrl-adapter"] == "agent:solver"
    refused = _ask(running.url, "tiny-chat", {"x-spanrl-agent": "nobody"})
    assert refused.status_code == 404 and "--agent-adapter" in refused.json()["error"]["message"]


def test_a_moved_latest_is_loaded_by_the_next_request(served) -> None:
    running, data = served
    _ask(running.url, "solver")
    root = agent_adapters_dir(data, "solver")
    shutil.copytree(root / "c1", root / "c2")
    _point_latest(root, "c2")
    assert _ask(running.url, "solver").status_code == 200
    assert running.server.agent_cycles["solver"] == "c2"
