"""Agent Lightning's trace-to-triplet adapter cases as OTLP span files.

The cases of ``tests/adapter/test_triplet_trace_tree.py`` in microsoft/agent-lightning's v0.x line
(``TraceTree`` / ``TracerTraceToTriplet``), re-encoded as the spans an Agent Lightning tracer sends:
``openai.chat.completion`` / ``chat_model.llm`` LLM spans with OpenLLMetry-style ``gen_ai.prompt.N.*``
/ ``gen_ai.completion.N.*`` attributes and plain ``prompt_token_ids`` / ``response_token_ids``,
agent spans carrying ``agent.name``, AgentOps reward spans (``agentops.task.output`` =
``{"type": "reward", "value": x}``), and the rollout id as the resource attribute
``agentlightning.rollout_id``. One trace (and one rollout) per case; times in seconds as there.

``AGL`` holds what Agent Lightning's adapter yields for each case (its tests' assertions): the calls
in order with their token ids, response id and agent name, and the triplet rewards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.ingest.otlp_lines import T0, key_values, span

SECOND = 1_000_000_000


@dataclass
class Case:
    """One rollout: spans named as in the Agent Lightning test, ids assigned in definition order."""

    name: str
    index: int
    spans: list[dict[str, Any]] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def trace_id(self) -> str:
        return f"{0xA61 << 16 | self.index:032x}"

    def sid(self, name: str) -> str:
        if name not in self.ids:
            self.ids[name] = f"{self.index:02x}{len(self.ids) + 1:014x}"
        return self.ids[name]

    def add(self, name: str, span_name: str, parent: str | None, start: float, end: float,
            attrs: dict[str, Any] | None = None) -> None:
        parent_id = self.sid(parent) if parent else None
        self.spans.append(span(span_name, self.trace_id, self.sid(name), parent_id, attrs=attrs,
                               start=T0 + int(start * SECOND), dur=int((end - start) * SECOND)))

    def line(self) -> str:
        resource = {"service.name": "agl-case", "agentlightning.rollout_id": self.name,
                    "agentlightning.attempt_id": "attempt-1"}
        doc = {"resourceSpans": [{"resource": {"attributes": key_values(resource)},
                                  "scopeSpans": [{"scope": {"name": "agentops"}, "spans": self.spans}]}]}
        return json.dumps(doc, separators=(",", ":"))


def _llm_attrs(prompt_ids: list[int], response_ids: list[int], response_id: str, text: str = "ok") -> dict:
    """An LLM span as the Agent Lightning tracer records it (OpenLLMetry attributes + token ids)."""
    return {"gen_ai.system": "OpenAI", "gen_ai.request.model": "m", "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "question", "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": text, "gen_ai.response.id": response_id,
            "prompt_token_ids": prompt_ids, "response_token_ids": response_ids}


def _multimodal_attrs(response_id: str, image_url: str, answer: str, token_ids: bool) -> dict:
    content = json.dumps([{"type": "text", "text": "Question: How many food items are shown in the bar graph?"},
                          {"type": "image_url", "image_url": {"url": image_url}}])
    attrs = {"gen_ai.request.type": "chat", "gen_ai.system": "OpenAI", "gen_ai.request.model": "vl-model",
             "gen_ai.request.temperature": 0.0, "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": content,
             "gen_ai.response.id": response_id, "gen_ai.usage.prompt_tokens": 10,
             "gen_ai.usage.completion_tokens": 2, "gen_ai.completion.0.content": answer,
             "gen_ai.completion.0.finish_reason": "stop", "gen_ai.completion.0.role": "assistant"}
    if token_ids:
        attrs.update(prompt_token_ids=[151644, 8948, 198, 2610], response_token_ids=[785, 3619, 4771])
    return attrs


def _reward(value: float) -> dict:
    return {"agentops.task.output": json.dumps({"type": "reward", "value": value})}


QWEN_IMAGE = "file:///root/test.png"
GPT_IMAGE = "data:image/jpeg;base64,AAA..."


def build_cases() -> list[Case]:
    cases: list[Case] = []

    def case(name: str) -> Case:
        cases.append(Case(name, len(cases) + 1))
        return cases[-1]

    c = case("agent-on-root")  # test_trace_tree_from_spans_orders_children_and_agent_names
    c.add("root", "agent.session", None, 0.0, 10.0, {"agent.name": "primary-agent"})
    c.add("llm", "openai.chat.completion", "root", 1.0, 2.0, _llm_attrs([1, 2], [3, 4], "resp-1"))
    c.add("reward", "agent.reward", "root", 3.0, 3.1, _reward(1.0))

    c = case("orphan-agent")  # test_trace_tree_handles_missing_parent_and_empty_input
    c.add("child", "agent.child", "ghost-parent", 2.0, 4.0, {"agent.name": "nested"})
    c.add("grandchild", "openai.chat.completion", "child", 3.0, 3.5, _llm_attrs([1], [2], "resp-nested"))
    c.add("reward", "agent.reward", "child", 3.6, 3.7, _reward(1.0))

    c = case("repair")  # test_trace_tree_repair_hierarchy_moves_llm_span_under_agent
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent", "agent.node", "root", 1.0, 9.0, {"agent.name": "planner"})
    c.add("llm", "openai.chat.completion", "root", 2.0, 3.0, _llm_attrs([42], [7], "resp-planner"))

    c = case("repair-reward")  # test_tracer_trace_to_triplet_repair_required_for_agent_filter
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent", "agent.node", "root", 1.0, 9.0, {"agent.name": "planner"})
    c.add("llm", "openai.chat.completion", "root", 2.0, 3.0, _llm_attrs([7], [8], "resp-planner-2"))
    c.add("reward", "agent.reward", "agent", 4.0, 4.5, _reward(0.3))

    c = case("dedup")  # test_tracer_trace_to_triplet_dedup_and_skip_empty_token_spans (+ to_trajectory)
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent", "agent.node", "root", 1.0, 9.0, {"agent.name": "collector"})
    c.add("llm-1", "openai.chat.completion", "agent", 2.0, 3.0, _llm_attrs([10], [20], "resp-shared"))
    c.add("llm-2", "openai.chat.completion", "agent", 3.5, 4.2, _llm_attrs([99], [98], "resp-shared"))
    missing_tokens = {k: v for k, v in _llm_attrs([], [], "resp-3").items() if not k.startswith("gen_ai.")}
    missing_tokens["gen_ai.response.id"] = "resp-3"  # a call span with no messages and no token ids
    c.add("llm-3", "openai.chat.completion", "agent", 5.0, 5.5, missing_tokens)
    c.add("reward", "agent.reward", "agent", 6.0, 6.5, _reward(0.25))

    c = case("dedup-across-agents")  # test_trace_tree_find_llm_calls_dedupes_across_agents
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent-a", "agent.node", "root", 0.5, 5.0, {"agent.name": "vision-a"})
    c.add("agent-b", "agent.node", "root", 5.1, 9.5, {"agent.name": "vision-b"})
    c.add("llm-a", "openai.chat.completion", "agent-a", 1.0, 2.0,
          _multimodal_attrs("chatcmpl-shared", QWEN_IMAGE, "The bar graph shows 10 food items.", True))
    c.add("llm-b", "openai.chat.completion", "agent-b", 6.0, 7.0,
          _multimodal_attrs("chatcmpl-shared", GPT_IMAGE, "The bar graph shows 13 food items.", False))
    c.add("reward", "agent.reward", "root", 9.6, 9.7, _reward(1.0))

    c = case("multimodal")  # test_tracer_trace_to_triplet_handles_multimodal_payloads
    c.add("root", "session", None, 0.0, 15.0)
    c.add("agent", "agent.node", "root", 0.5, 14.5, {"agent.name": "vision-agent"})
    c.add("llm-qwen", "openai.chat.completion", "agent", 1.0, 2.0,
          _multimodal_attrs("chatcmpl-qwen", QWEN_IMAGE, "The bar graph shows 10 food items.", True))
    c.add("llm-gpt", "openai.chat.completion", "agent", 10.0, 11.0,
          _multimodal_attrs("chatcmpl-gpt", GPT_IMAGE, "The bar graph shows 13 food items.", False))
    c.add("reward", "agent.reward", "agent", 12.0, 12.5, _reward(0.7))

    c = case("siblings")  # test_tracer_trace_to_triplet_reward_match_first_sibling
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent", "agent.node", "root", 1.0, 9.0, {"agent.name": "sibling-agent"})
    c.add("agent-2", "agent.node", "root", 1.0, 9.0, {"agent.name": "sibling-agent"})
    c.add("llm-1", "openai.chat.completion", "agent", 2.0, 3.0, _llm_attrs([1], [2], "resp-1"))
    c.add("reward", "agent.reward", "agent", 3.5, 3.6, _reward(0.8))
    c.add("llm-2", "openai.chat.completion", "agent-2", 3.1, 3.2, _llm_attrs([3], [4], "resp-2"))

    c = case("chat-model-llm")  # test_tracer_trace_to_triplet_matches_chat_model_llm_spans
    c.add("root", "session", None, 0.0, 10.0)
    c.add("agent", "agent.node", "root", 1.0, 9.0, {"agent.name": "langchain-agent"})
    c.add("llm-structured", "chat_model.llm", "agent", 2.0, 3.0,
          {"gen_ai.request.type": "chat", "gen_ai.system": "OpenAI", "gen_ai.request.model": "gpt-4.1-mini",
           "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Extract the key facts.",
           "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": '{"facts": ["sky is blue"]}',
           "gen_ai.response.id": "resp-structured", "prompt_token_ids": [1, 2, 3], "response_token_ids": [4, 5, 6]})
    c.add("reward", "agent.reward", "agent", 4.0, 4.1, _reward(0.9))
    return cases


AGL_FIRST_SIBLING = {"siblings": [0.8, None]}  # reward_match=RewardMatchPolicy.FIRST_SIBLING: no spanrl twin

# What Agent Lightning yields per case: [(prompt ids, response ids, response id, agent name, triplet reward)]
# (its default adapter, FIRST_OCCURRENCE reward matching; where the Agent Lightning test had no reward
# span, one was added after the last call so the rollout has a reward: AGL gives it to that call).
AGL: dict[str, list[tuple[list[int], list[int], str, str | None, float | None]]] = {
    "agent-on-root": [([1, 2], [3, 4], "resp-1", "primary-agent", 1.0)],
    "orphan-agent": [([1], [2], "resp-nested", "nested", 1.0)],
    "repair": [([42], [7], "resp-planner", "planner", None)],
    "repair-reward": [([7], [8], "resp-planner-2", "planner", 0.3)],
    "dedup": [([10], [20], "resp-shared", "collector", 0.25)],
    "dedup-across-agents": [([151644, 8948, 198, 2610], [785, 3619, 4771], "chatcmpl-shared", "vision-a", 1.0)],
    "multimodal": [([151644, 8948, 198, 2610], [785, 3619, 4771], "chatcmpl-qwen", "vision-agent", None),
                   ([], [], "chatcmpl-gpt", "vision-agent", 0.7)],
    # the default FIRST_OCCURRENCE gives the reward (3.5 s) to llm-2, the call that ended last before it;
    # the test itself asks for FIRST_SIBLING, which gives it to llm-1, its sibling (AGL_FIRST_SIBLING)
    "siblings": [([1], [2], "resp-1", "sibling-agent", None), ([3], [4], "resp-2", "sibling-agent", 0.8)],
    "chat-model-llm": [([1, 2, 3], [4, 5, 6], "resp-structured", "langchain-agent", 0.9)],
}
