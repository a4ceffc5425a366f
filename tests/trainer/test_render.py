"""The trainer's text path renders exactly what ``spanrl serve`` showed the model (one renderer).

Agent conversations (LangGraph: ``content: null`` with two tool calls and two tool results; OpenAI
Agents SDK: developer instructions, a handoff call with ``{}`` arguments, content-part lists) through
the bundled SmolLM2's plain ChatML (a template that ignores ``tools``) and the tiny test model's
Qwen-style template: no template error, and the trainer's prompt ids are ``render_prompt``'s (serve's)
for every call of the conversation. Rows that still cannot render are counted by their real reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from spanrl.serve.tools import parse_tool_calls, render_prompt
from spanrl.trainer.data import DataStats, build_sequences
from spanrl.trainer.render import normalise_messages, render_turn
from spanrl.transitions import TRANSITION_SCHEMA
from tests.helpers.demo_tokenizer import demo_tokenizer
from tests.helpers.tiny_model import make_tiny_model, transition_row

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers",
                                        "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}
LANGGRAPH = (
    [WEATHER, ADD],
    [{"role": "system", "content": "You are a helpful agent. Use the tools."},
     {"role": "user", "content": "What is the weather in Paris, and what is 12 + 30?"},
     {"role": "assistant", "content": None, "tool_calls": [
         {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
         {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": '{"a": 12, "b": 30}'}}]},
     {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 degrees"},
     {"role": "tool", "tool_call_id": "call_2", "content": "42"},
     {"role": "assistant", "content": "It is sunny and 21 degrees in Paris, and 12 + 30 = 42."}],
)
HANDOFF = {"type": "function", "function": {"name": "transfer_to_math_agent", "description": "Handoff to the Math Agent",
                                            "parameters": {"type": "object", "properties": {}}}}
AGENTS_SDK = (
    [HANDOFF],
    [{"role": "developer", "content": "You triage requests. Hand arithmetic off to the math agent."},
     {"role": "user", "content": [{"type": "input_text", "text": "What is 2 + 3?"}]},
     {"role": "assistant", "content": None, "tool_calls": [
         {"id": "call_h", "type": "function", "function": {"name": "transfer_to_math_agent", "arguments": "{}"}}]},
     {"role": "tool", "tool_call_id": "call_h", "content": [{"type": "text", "text": '{"assistant": "Math Agent"}'}]},
     {"role": "system", "content": "You are the math agent."},
     {"role": "assistant", "content": [{"type": "output_text", "text": "2 + 3 = 5"}]}],
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(make_tiny_model(tmp_path_factory.mktemp("tiny")))


@pytest.fixture(scope="module")
def smollm2():
    return demo_tokenizer()


def _rows(conversation: tuple[list, list], tools_json: str | None = None) -> list[dict]:
    """One text row per assistant turn: the messages before it as the prompt, the turn as the response."""
    tools, messages = conversation
    turns = [i for i, m in enumerate(messages) if m["role"] in ("assistant", "ai")]
    return [transition_row(rollout_id="r", task_id="t", step=i, token_source="text", final_reward=1.0, advantage=1.0,
                           prompt_messages=json.dumps(messages[:i]), response_message=json.dumps(m),
                           tools=tools_json if tools_json is not None else json.dumps(tools))
            for i, m in enumerate(messages) if i in turns]


def _build(tokenizer, rows: list[dict]):
    return build_sequences(pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA), tokenizer, 4096, 4096)


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
@pytest.mark.parametrize("conversation", [LANGGRAPH, AGENTS_SDK], ids=["langgraph", "agents_sdk"])
def test_agent_conversations_render_and_the_prompt_ids_are_serves(which, conversation, request) -> None:
    tokenizer = request.getfixturevalue(which)
    tools, messages = conversation
    seqs, stats = _build(tokenizer, _rows(conversation))
    assert (stats.template_error, stats.template_mismatch, stats.text) == (0, 0, 2), stats.summary()
    prompts = [messages[:i] for i, m in enumerate(messages) if m["role"] == "assistant"]
    for seq, prompt in zip(seqs, prompts, strict=True):
        assert seq.ids[: seq.n_prompt] == render_prompt(tokenizer, prompt, tools)  # what serve fed the model
        assert seq.ids[-1] == tokenizer.eos_token_id and seq.n_response > 0
    last = tokenizer.decode(seqs[-1].ids[seqs[-1].n_prompt:], skip_special_tokens=True)
    assert last == messages[-1]["content"] if isinstance(messages[-1]["content"], str) else last == "2 + 3 = 5"


def test_a_tool_call_response_trains_on_the_tool_call_text_for_smollm2(smollm2) -> None:
    """SmolLM2's template ignores tools: serve showed it the Hermes tool block and parsed its
    ``<tool_call>`` text, so that text (as ``tool_call_text`` writes it) is what the row trains on."""
    tools, messages = LANGGRAPH
    seqs, stats = _build(smollm2, _rows(LANGGRAPH))
    first = seqs[0]
    prompt = smollm2.decode(first.ids[: first.n_prompt])
    assert "<tools>" in prompt and '"name": "get_weather"' in prompt and prompt.endswith("<|im_start|>assistant\n")
    response = smollm2.decode(first.ids[first.n_prompt:])
    assert response == ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
                        '<tool_call>\n{"name": "add", "arguments": {"a": 12, "b": 30}}\n</tool_call><|im_end|>')
    parsed = parse_tool_calls(response.removesuffix("<|im_end|>"))  # what serve would return for it
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Paris"}), ("add", {"a": 12, "b": 30})]
    second = smollm2.decode(seqs[1].ids[: seqs[1].n_prompt])  # results as serve showed them
    assert "<tool_response>\n42\n</tool_response>" in second


def test_the_tiny_models_template_gets_structured_calls(tiny) -> None:
    seqs, _ = _build(tiny, _rows(AGENTS_SDK))
    assert tiny.decode(seqs[0].ids[seqs[0].n_prompt:]) == (
        '<tool_call>\n{"name": "transfer_to_math_agent", "arguments": {}}\n</tool_call><|im_end|>')


def test_stored_shapes_render_like_the_openai_request(smollm2, tiny) -> None:
    """What instrumentations store: tools as bare function dicts or JSON text, arguments as objects,
    bare (LangChain) calls, roles by another name: the same prompt as the request serve received."""
    tools, messages = LANGGRAPH
    bare_tools = [t["function"] for t in tools]
    stored = [dict(m) for m in messages]
    stored[1] = {"role": "human", "content": [messages[1]["content"]]}
    stored[2] = {"role": "ai", "content": "", "tool_calls": [
        {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
        {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": {"a": 12, "b": 30}}}]}
    for tokenizer in (smollm2, tiny):
        for shape in (bare_tools, [json.dumps(t) for t in tools], json.dumps(bare_tools)):
            assert render_prompt(tokenizer, stored, shape) == render_prompt(tokenizer, messages, tools)
        seqs, stats = _build(tokenizer, _rows((bare_tools, stored)))
        reference, _ = _build(tokenizer, _rows(LANGGRAPH))
        assert (stats.template_error, len(seqs)) == (0, 2) and [s.ids for s in seqs] == [s.ids for s in reference]


def test_a_tools_template_that_rejects_structured_calls_falls_back_to_text_in_both_paths(tiny) -> None:
    tools, messages = LANGGRAPH
    original = tiny.chat_template
    tiny.chat_template = ("{%- for m in messages %}{%- if m.tool_calls %}{{ raise_exception('no tool calls') }}"
                          "{%- endif %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
                          "{%- if tools %}{%- endif %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                          "{%- endif %}")
    try:
        seqs, stats = _build(tiny, _rows(LANGGRAPH))
        assert (stats.template_error, stats.text) == (0, 2)
        assert seqs[1].ids[: seqs[1].n_prompt] == render_prompt(tiny, messages[:5], tools)
        assert "<tool_response>" in tiny.decode(seqs[1].ids[: seqs[1].n_prompt])
        assert tiny.decode(seqs[0].ids[seqs[0].n_prompt:]).startswith('<tool_call>\n{"name": "get_weather"')
    finally:
        tiny.chat_template = original


def test_unrenderable_rows_are_counted_by_their_real_reason(tiny) -> None:
    from spanrl.trainer.config import TrainConfig
    from spanrl.trainer.train import _nothing_to_train_hint

    rows = _rows(LANGGRAPH)
    original = tiny.chat_template
    try:
        tiny.chat_template = None
        _, none = _build(tiny, rows)
        tiny.chat_template = "{{ raise_exception('roles must alternate') }}"
        _, raising = _build(tiny, rows)
    finally:
        tiny.chat_template = original
    assert none.template_errors == {"tokenizer has no chat template": 2} and none.template_error == 2
    assert raising.template_errors == {"TemplateError: roles must alternate": 2}
    assert "tokenizer has no chat template x2" in none.summary()
    hint = _nothing_to_train_hint(TrainConfig(model=Path(".")), raising)
    assert "roles must alternate" in hint and "does its tokenizer" not in hint
    _, broken = _build(tiny, [{**rows[0], "tools": "{not json"}])
    assert broken.template_errors == {"ValueError: tools is not JSON": 1}


def test_distinct_reasons_are_capped() -> None:
    stats = DataStats()
    for i in range(20):
        stats.count_error(f"reason {i}")
    assert stats.template_error == 20 and len(stats.template_errors) == 9 and stats.template_errors["other reasons"] == 12


def test_render_turn_and_normalise_keep_serves_rules(tiny) -> None:
    tools, messages = LANGGRAPH
    prompt, full = render_turn(tiny, messages[:2], tools, messages[2])
    assert full.startswith(prompt) and '"arguments": {"city": "Paris"}' in full
    plain = normalise_messages(messages[:3], None, template_tools=False)  # no tools: calls still as text, no block
    assert plain[0] == messages[0] and plain[2]["content"].startswith("<tool_call>\n")
