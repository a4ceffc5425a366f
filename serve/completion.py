"""The chat completion a finished job is: each sequence decoded, cut at its stop string, its tool
calls parsed out when the request offered tools; usage; the token ids when asked
(``return_token_ids``, vLLM's fields). The Responses and Messages APIs are written from it
(serve/responses_api.py, serve/messages_api.py), so every API answers from the same text.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from spanrl.serve.api import logprobs_content
from spanrl.serve.batching import Job
from spanrl.serve.tools import parse_tool_calls


def completion_response(tok: Any, body: dict[str, Any], model: str, job: Job, tools: bool,
                        id_prefix: str = "chatcmpl-") -> dict[str, Any]:
    """``id_prefix`` names the API the client called (``resp_``, ``msg_``): the span's response id is
    then the one the client (and a gateway in front) got back."""
    choices, completion_tokens = [], 0
    for i, seq in enumerate(job.seqs):
        text = tok.decode(seq.output_ids, skip_special_tokens=True)
        if seq.stop_at is not None:
            text = text[: seq.stop_at]
        parsed = parse_tool_calls(text) if tools else None
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content if parsed else text}
        finish = seq.finish_reason or "length"
        if parsed and parsed.tool_calls:
            message["tool_calls"] = parsed.tool_calls
            finish = "tool_calls" if finish == "stop" else finish
        choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": finish,
                                  "logprobs": logprobs_content(tok, seq) if body.get("logprobs") else None}
        if body.get("return_token_ids"):
            choice["token_ids"] = list(seq.output_ids)
        choices.append(choice)
        completion_tokens += len(seq.output_ids)
    prompt_tokens = len(job.seqs[0].prompt_ids)
    response: dict[str, Any] = {
        "id": f"{id_prefix}{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "system_fingerprint": job.adapter_used or "base", "choices": choices,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
    if body.get("return_token_ids"):
        response["prompt_token_ids"] = list(job.seqs[0].prompt_ids)
    return response
