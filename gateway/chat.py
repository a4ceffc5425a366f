"""The OpenAI chat-completions and text-completions calls (``/v1/chat/completions``,
``/v1/completions``): both ask for vLLM's ``return_token_ids`` and read its fields
(gateway/tracing.py). A text completion's prompt is recorded as one user message holding the prompt
text, its answer as the assistant's (``gen_ai.operation.name = text_completion``).
"""

from __future__ import annotations

from typing import Any

from spanrl.gateway.calls import Call, int_list, text_part
from spanrl.gateway.tracing import Accumulator, response_attributes, strip_extras
from spanrl.serve.tracing import semconv_input


class ChatCall(Call):
    route = "/chat/completions"
    id_field = "return_token_ids"
    logprob_field = {"logprobs": True}

    def input_messages(self) -> list[dict[str, Any]] | None:
        return semconv_input(self.body.get("messages") or [])

    def response_attributes(self, data: dict[str, Any]) -> dict[str, Any]:
        return response_attributes(data, self.capture)

    def accumulator(self) -> Accumulator:
        return Accumulator()

    def strip(self, payload: dict[str, Any]) -> dict[str, Any]:
        return strip_extras(payload)


class CompletionsCall(ChatCall):
    """A legacy text completion: the prompt is text (a string, or a one-string list); a prompt of
    several strings or of token ids is not one conversation and is recorded without input messages."""

    route = "/completions"
    operation = "text_completion"
    logprob_field = {"logprobs": 1}  # the legacy API's count of top log-probs (1: the sampled token's, and one)

    def asked_logprobs(self) -> bool:
        """``logprobs: 0`` asks too (the sampled tokens' log-probs, no alternatives)."""
        value = self.body.get("logprobs")
        return value is not None and value is not False

    def input_messages(self) -> list[dict[str, Any]] | None:
        prompt = self.body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        return [{"role": "user", "parts": [text_part(prompt)]}] if isinstance(prompt, str) else None

    def response_attributes(self, data: dict[str, Any]) -> dict[str, Any]:
        """The completion read as a chat completion: ``choices[i].text`` is the assistant's message;
        vLLM puts a completion's ``prompt_token_ids`` on each choice (the chat answer: at the top)."""
        choices = [c for c in data.get("choices") or [] if isinstance(c, dict)]
        as_chat = {**data, "choices": [{**c, "message": {"role": "assistant", "content": c.get("text")}}
                                       for c in choices]}
        if as_chat.get("prompt_token_ids") is None and choices and int_list(choices[0].get("prompt_token_ids")):
            as_chat["prompt_token_ids"] = choices[0]["prompt_token_ids"]
        return response_attributes(as_chat, self.capture)

    def accumulator(self) -> Accumulator:
        return Accumulator(text_field="text")

    def strip(self, payload: dict[str, Any]) -> dict[str, Any]:
        for choice in payload.get("choices") or []:
            if isinstance(choice, dict):
                choice.pop("prompt_token_ids", None)
        return strip_extras(payload)
