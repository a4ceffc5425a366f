"""``spanrl serve`` against the real ``openai`` client, on the tiny random chat model.

One in-process server (port 0) is shared by the module; its spans go to an InMemorySpanExporter.
The hot-reload test starts its own server so the shared one stays on the base model.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
import torch
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model

NAME = "tiny-chat"
ADD_TOOL = {"type": "function", "function": {
    "name": "add", "description": "Add two numbers",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"]}}}
HELLO = [{"role": "user", "content": "What is the weather in Paris today?"}]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("model") / NAME)


@pytest.fixture(scope="module")
def served(model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    exporter = InMemorySpanExporter()
    config = ServeConfig(model=model_dir, data=tmp_path_factory.mktemp("data"), port=0, max_tokens=12,
                         batch_wait_ms=100, max_batch=16, device="cpu")
    running = serve_in_background(config, span_exporter=exporter)
    yield running, exporter
    running.stop()


@pytest.fixture(scope="module")
def client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served[0].url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _span_for(exporter: InMemorySpanExporter, response_id: str):
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.response.id") == response_id]
    assert len(spans) == 1, f"expected one server span for {response_id}, got {len(spans)}"
    return spans[0]


def test_plain_chat_shape(client: openai.OpenAI, served) -> None:
    raw = client.chat.completions.with_raw_response.create(model=NAME, messages=HELLO, temperature=0, max_tokens=6)
    resp = raw.parse()
    assert raw.headers["x-spanrl-adapter"] == "base" and resp.system_fingerprint == "base"
    assert resp.object == "chat.completion" and resp.id.startswith("chatcmpl-") and resp.model == NAME
    (choice,) = resp.choices
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in {"stop", "length"} and choice.message.tool_calls is None
    assert 1 <= resp.usage.completion_tokens <= 6
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    models = client.models.list()
    assert [m.id for m in models.data] == [NAME]


def test_span_carries_the_exact_tokens(client: openai.OpenAI, served, model_dir: Path) -> None:
    running, exporter = served
    resp = client.chat.completions.create(model=NAME, messages=HELLO, temperature=0.7, seed=3, max_tokens=10,
                                          logprobs=True, extra_body={"return_token_ids": True})
    data = resp.model_dump()
    span = _span_for(exporter, resp.id)
    attrs = span.attributes
    assert span.name == f"chat {NAME}" and span.kind.name == "SERVER"
    assert span.resource.attributes["service.name"] == "spanrl-serve"
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "spanrl"
    assert list(attrs["spanrl.prompt_token_ids"]) == data["prompt_token_ids"]
    assert list(attrs["spanrl.response_token_ids"]) == data["choices"][0]["token_ids"]
    assert list(attrs["spanrl.response_logprobs"]) == [c["logprob"] for c in data["choices"][0]["logprobs"]["content"]]
    assert attrs["gen_ai.usage.input_tokens"] == resp.usage.prompt_tokens == len(data["prompt_token_ids"])
    assert attrs["gen_ai.usage.output_tokens"] == resp.usage.completion_tokens
    assert list(attrs["gen_ai.response.finish_reasons"]) == [resp.choices[0].finish_reason]
    assert attrs["spanrl.adapter"] == "base" and attrs["gen_ai.request.temperature"] == 0.7
    # the prompt ids are the chat template's; the response ids decode to the returned text
    tok = running.server.engine.tokenizer
    expected_prompt = tok.apply_chat_template(HELLO, add_generation_prompt=True, tokenize=False)
    assert tok.decode(attrs["spanrl.prompt_token_ids"]) == expected_prompt
    assert tok.decode(attrs["spanrl.response_token_ids"], skip_special_tokens=True) == resp.choices[0].message.content
    assert json.loads(attrs["gen_ai.output.messages"])[0]["role"] == "assistant"


def test_logprobs_are_the_sampling_distribution(client: openai.OpenAI, served, model_dir: Path) -> None:
    """Recompute with a fresh copy of the model: sampling log-probs = log softmax(logits / T)."""
    from transformers import AutoModelForCausalLM

    _, exporter = served
    temperature = 0.5
    resp = client.chat.completions.create(model=NAME, messages=HELLO, temperature=temperature, seed=11,
                                          max_tokens=8, logprobs=True, top_logprobs=3)
    attrs = _span_for(exporter, resp.id).attributes
    prompt, response = list(attrs["spanrl.prompt_token_ids"]), list(attrs["spanrl.response_token_ids"])
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(torch.tensor([prompt + response])).logits[0, len(prompt) - 1:-1]
    targets = torch.tensor(response)[:, None]
    raw = torch.log_softmax(logits, -1).gather(-1, targets)[:, 0]
    scaled = torch.log_softmax(logits / temperature, -1).gather(-1, targets)[:, 0]
    assert torch.allclose(torch.tensor(list(attrs["spanrl.response_logprobs"])), scaled, atol=1e-4)
    assert torch.allclose(torch.tensor(list(attrs["spanrl.response_logprobs_raw"])), raw, atol=1e-4)
    for item in resp.choices[0].logprobs.content:
        assert len(item.top_logprobs) == 3
        assert item.top_logprobs[0].logprob >= item.top_logprobs[-1].logprob
        assert item.logprob <= item.top_logprobs[0].logprob + 1e-6


def test_n_choices_and_seed_reproducible(client: openai.OpenAI) -> None:
    kwargs = dict(model=NAME, messages=HELLO, temperature=1.0, top_p=0.9, seed=1234, max_tokens=8, n=3,
                  extra_body={"return_token_ids": True})
    first = client.chat.completions.create(**kwargs).model_dump()
    again = client.chat.completions.create(**kwargs).model_dump()
    assert [c["index"] for c in first["choices"]] == [0, 1, 2]
    ids = [c["token_ids"] for c in first["choices"]]
    assert ids == [c["token_ids"] for c in again["choices"]]  # same seed -> same samples
    assert len({tuple(x) for x in ids}) > 1  # choice i samples with seed + i
    assert first["usage"]["completion_tokens"] == sum(len(x) for x in ids)


def test_tools_render_into_the_prompt(client: openai.OpenAI, served) -> None:
    """End-to-end shape with tools: the template renders them; the reply has a valid shape."""
    running, exporter = served
    messages = HELLO + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
    ]
    resp = client.chat.completions.create(model=NAME, messages=messages, tools=[ADD_TOOL], max_tokens=5)
    assert resp.choices[0].finish_reason in {"stop", "length", "tool_calls"}
    prompt = running.server.engine.tokenizer.decode(_span_for(exporter, resp.id).attributes["spanrl.prompt_token_ids"])
    assert "<tools>" in prompt and '"name": "add"' in prompt
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>' in prompt


def test_tool_call_reply_parsed_end_to_end(client: openai.OpenAI, served, monkeypatch: pytest.MonkeyPatch) -> None:
    """The random model never writes the tool format, so this one test forces the engine's sampled
    tokens (everything after the sampler - decode loop, parsing, API shape, openai SDK - is real). The
    sampler, not the decode loop, is replaced: with continuous batching a request may join a decode loop
    that an earlier test's request started, which a replaced loop would miss (a flake under load)."""
    running, _ = served
    engine = running.server.engine
    eos = engine.tokenizer.eos_token_id
    forced = engine.tokenizer('Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n'
                              "</tool_call>", add_special_tokens=False)["input_ids"] + [eos]

    def forced_step(_logits, seqs, _generators) -> list[int]:
        tokens = []
        for s in seqs:
            if s.finish_reason:
                tokens.append(engine.pad_id)
                continue
            tok = forced[len(s.output_ids)]
            s.output_ids.append(tok)
            s.logprobs.append(0.0)
            s.raw_logprobs.append(0.0)
            s.finish_reason = "stop" if tok == eos else None
            tokens.append(tok)
        return tokens

    monkeypatch.setattr(engine, "_sample_step", forced_step)
    resp = client.chat.completions.create(model=NAME, messages=HELLO, tools=[ADD_TOOL])
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me add."
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "add" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"a": 2, "b": 40}
    plain = client.chat.completions.create(model=NAME, messages=HELLO)  # no tools: never parsed
    assert plain.choices[0].message.tool_calls is None and "<tool_call>" in plain.choices[0].message.content


def test_concurrent_requests_are_batched(served) -> None:
    running, _ = served
    base = running.url
    before = httpx.get(base + "/health").json()
    body = {"model": NAME, "messages": HELLO, "max_tokens": 6, "temperature": 0}
    with httpx.Client(timeout=60) as http, ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: http.post(base + "/v1/chat/completions",
                                                    json={**body, "seed": i}), range(8)))
    assert [r.status_code for r in results] == [200] * 8
    after = httpx.get(base + "/health").json()
    calls = after["generate_calls"] - before["generate_calls"]
    assert after["rows_generated"] - before["rows_generated"] == 8
    admitted = after["admitted_rows"] - before["admitted_rows"]  # rows that joined a running batch
    assert calls < 8 and (after["max_batch_size"] >= 2 or admitted >= 1), after


def test_traceparent_makes_the_server_span_a_child(client: openai.OpenAI, served) -> None:
    from opentelemetry.propagate import inject
    from opentelemetry.trace import set_span_in_context

    _, exporter = served
    caller = TracerProvider().get_tracer("test-agent")
    with caller.start_as_current_span("openai.chat") as parent:
        headers: dict[str, str] = {}
        inject(headers, context=set_span_in_context(parent))
        resp = client.chat.completions.create(model=NAME, messages=HELLO, max_tokens=3, extra_headers=headers)
    span = _span_for(exporter, resp.id)
    assert span.context.trace_id == parent.get_span_context().trace_id
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    no_parent = client.chat.completions.create(model=NAME, messages=HELLO, max_tokens=3)
    assert _span_for(exporter, no_parent.id).parent is None


def test_bad_requests_get_openai_errors(client: openai.OpenAI, served) -> None:
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model=NAME, messages=[])
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model=NAME, messages=HELLO, temperature=7)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-9", messages=HELLO)
    bad = httpx.post(served[0].url + "/v1/chat/completions", content=b"{not json", timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert client.chat.completions.create(model=NAME, messages=HELLO, max_tokens=2).choices  # still serving


def test_stream_returns_the_same_completion(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model=NAME, messages=HELLO, temperature=0, max_tokens=6, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    whole = client.chat.completions.create(model=NAME, messages=HELLO, temperature=0, max_tokens=6)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


# --------------------------------------------------------------------------- adapters
def _write_adapter(model_dir: Path, out: Path, seed: int) -> Path:
    """A real PEFT LoRA adapter (all-linear, random non-zero B so it changes the outputs)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                                 init_lora_weights=False))
    peft_model.save_pretrained(out)
    return out


def _point_latest(adapters: Path, cycle_id: str) -> None:
    tmp = adapters / ".LATEST.tmp"
    tmp.write_text(cycle_id + "\n")
    os.replace(tmp, adapters / "LATEST")


def test_adapter_hot_reload_mid_traffic(model_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    adapters = data / "adapters"
    adapters.mkdir(parents=True)
    _write_adapter(model_dir, adapters / "cycle-0001", seed=1)  # on disk; LATEST not written yet
    _write_adapter(model_dir, adapters / "cycle-0002", seed=2)
    config = ServeConfig(model=model_dir, data=data, adapter="LATEST", port=0, max_tokens=4, device="cpu",
                         continuous_batching=True)  # admission must not starve the swap
    running = serve_in_background(config)
    seen: list[tuple[str, str, list[float]]] = []
    errors: list[str] = []
    stop = threading.Event()

    def loop() -> None:
        with httpx.Client(timeout=60) as http:
            while not stop.is_set():
                try:
                    r = http.post(running.url + "/v1/chat/completions", json={
                        "model": NAME, "messages": HELLO, "temperature": 0, "max_tokens": 4, "logprobs": True})
                    body = r.json()
                    if r.status_code != 200:
                        errors.append(f"{r.status_code} {body}")
                        continue
                    lps = [c["logprob"] for c in body["choices"][0]["logprobs"]["content"]]
                    seen.append((body["system_fingerprint"], r.headers["x-spanrl-adapter"], lps))
                except Exception as exc:  # a dropped connection counts as a failure
                    errors.append(repr(exc))

    def wait_for(fingerprint: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(s[0] == fingerprint for s in seen):
            time.sleep(0.05)
        assert any(s[0] == fingerprint for s in seen), f"never served {fingerprint}: {[s[0] for s in seen]}"

    clients = [threading.Thread(target=loop) for _ in range(2)]
    try:
        for t in clients:
            t.start()
        wait_for("base")
        _point_latest(adapters, "cycle-0001")
        wait_for("cycle-0001")
        _point_latest(adapters, "cycle-0002")
        wait_for("cycle-0002")
        (adapters / "cycle-bad").mkdir()  # a broken adapter folder: logged, old one keeps serving
        _point_latest(adapters, "cycle-bad")
        n = len(seen)
        deadline = time.monotonic() + 10
        while httpx.get(running.url + "/health").json()["adapter_load_errors"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        while len(seen) < n + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in clients:
            t.join(timeout=60)
    health = httpx.get(running.url + "/health").json()
    running.stop()
    assert errors == []
    order = [s[0] for s in seen]
    assert all(s[0] == s[1] for s in seen)  # header and system_fingerprint agree
    first = {fp: order.index(fp) for fp in ("base", "cycle-0001", "cycle-0002")}
    assert first["base"] < first["cycle-0001"] < first["cycle-0002"]
    assert order[-1] == "cycle-0002" and health["adapter"] == "cycle-0002" and health["adapter_load_errors"] == 1
    assert health["adapters_loaded"] == ["cycle-0002"]  # the old adapter was unloaded
    by_fp = {fp: lps for fp, _, lps in seen}
    assert by_fp["base"] != by_fp["cycle-0001"] != by_fp["cycle-0002"]  # the weights really changed


def test_load_lora_adapter_endpoint(model_dir: Path, tmp_path: Path, served, client: openai.OpenAI) -> None:
    running, _ = served
    adapters = running.server.config.data / "adapters"  # the only place it loads from by default
    adapter = _write_adapter(model_dir, adapters / "named", seed=3)
    bad = httpx.post(running.url + "/v1/load_lora_adapter", json={"lora_name": "x", "lora_path": str(adapters / "none")})
    assert bad.status_code == 400 and "adapter_config.json" in bad.json()["error"]["message"]
    ok = httpx.post(running.url + "/v1/load_lora_adapter", json={"lora_name": "my-lora", "lora_path": str(adapter)},
                    timeout=60)
    assert ok.status_code == 200, ok.text
    again = httpx.post(running.url + "/v1/load_lora_adapter", json={"lora_name": "my-lora", "lora_path": str(adapter)})
    assert again.status_code == 400 and "load_inplace" in again.json()["error"]["message"]  # vLLM's rule
    inplace = httpx.post(running.url + "/v1/load_lora_adapter", timeout=60,
                         json={"lora_name": "my-lora", "lora_path": str(adapter), "load_inplace": True})
    assert inplace.status_code == 200, inplace.text
    assert {m.id for m in client.models.list().data} == {NAME, "my-lora"}
    tuned = client.chat.completions.create(model="my-lora", messages=HELLO, temperature=0, max_tokens=4, logprobs=True)
    base = client.chat.completions.create(model=NAME, messages=HELLO, temperature=0, max_tokens=4, logprobs=True)
    assert tuned.system_fingerprint == "my-lora" and base.system_fingerprint == "base"
    assert [t.logprob for t in tuned.choices[0].logprobs.content] != [t.logprob for t in base.choices[0].logprobs.content]
    gone = httpx.post(running.url + "/v1/unload_lora_adapter", json={"lora_name": "my-lora"}, timeout=60)
    assert gone.status_code == 200
    assert [m.id for m in client.models.list().data] == [NAME]


def test_stop_strings_cut_the_reply(client: openai.OpenAI) -> None:
    full = client.chat.completions.create(model=NAME, messages=HELLO, temperature=0, max_tokens=12).choices[0]
    text = full.message.content
    starts = [i for i in range(len(text) // 3, len(text) - 1) if text[i:i + 2].isascii() and text[i:i + 2].isalnum()]
    assert starts, f"greedy reply {text!r} has no ASCII pair to stop on"
    stop = text[starts[0]:starts[0] + 2]
    cut = client.chat.completions.create(model=NAME, messages=HELLO, temperature=0, max_tokens=12, stop=[stop]).choices[0]
    assert cut.finish_reason == "stop" and cut.message.content == text[:text.find(stop)]


def test_rows_joining_a_running_batch_decode_like_alone(model_dir: Path) -> None:
    """Continuous batching: rows prefilled mid-flight and merged into the KV cache (shorter and
    longer histories, a row that ends at once, a batch that empties) give the tokens they give alone."""
    from spanrl.serve.engine import Engine, SamplingParams, Sequence
    from spanrl.serve.tools import render_prompt

    engine = Engine(model_dir, "cpu")
    texts = ["hi", "What is the weather in Paris today? It is sunny and 21 degrees, tell me more", "add 12 and 30",
             "x" * 40, "Hello!"]
    settings = [(0.0, 1.0, 30), (1.0, 0.9, 20), (0.7, 1.0, 7), (1.2, 0.5, 1), (0.0, 1.0, 12)]

    def make(i: int) -> Sequence:
        temperature, top_p, max_tokens = settings[i]
        prompt = render_prompt(engine.tokenizer, [{"role": "user", "content": texts[i]}], None)
        return Sequence(prompt, SamplingParams(temperature=temperature, top_p=top_p, seed=i, max_tokens=max_tokens))

    alone = [make(i) for i in range(5)]
    for seq in alone:
        engine.generate([seq], None)
    for plan in ({2: [1], 4: [2, 3], 9: [4]}, {1: [1, 2, 3, 4]}):
        joined, calls, finished = {0: make(0)}, [0], []

        def admit(_live: int, plan=plan, joined=joined, calls=calls) -> list[Sequence]:
            calls[0] += 1
            new = {i: make(i) for i in plan.get(calls[0], [])}
            joined.update(new)
            return list(new.values())

        engine.generate([joined[0]], None, admit=admit, on_finish=finished.append)
        assert [joined[i].output_ids for i in range(5)] == [s.output_ids for s in alone]
        for i in range(5):
            assert joined[i].logprobs == pytest.approx(alone[i].logprobs, abs=1e-4)
        assert len(finished) == 5 and finished[0] is joined[3]  # max_tokens=1: answered first
