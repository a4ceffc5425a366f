"""Token ids for snapshot rows that carry text only (``--format triplets --tokenizer PATH``).

The rule is the trainer's text path (``spanrl.trainer.data``): the chat template over the prompt
messages (+ tools) with a generation prompt gives the prompt; the same template over prompt +
response must start with that text, else the row is a template mismatch and is left out (never
misaligned). Prompt and rest are tokenised separately, as an engine would see them, and the
response ends at the first end-of-turn token. This is the one per-row Python loop of the export:
tokenising is the work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanrl.errors import InputError


def load_tokenizer(path: Path) -> Any:
    """A local tokenizer folder with a chat template (never the hub)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise InputError("--tokenizer needs transformers: pip install 'spanrl[train]'") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"--tokenizer {path}: cannot load a tokenizer there ({exc}); "
                         "pass a local model or tokenizer folder") from None
    if not getattr(tokenizer, "chat_template", None):
        raise InputError(f"--tokenizer {path}: the tokenizer has no chat template; pass one that has")
    return tokenizer


def _render(row: dict[str, Any], tokenizer: Any, stop_ids: set[int]) -> tuple[list[int], list[int]]:
    messages = json.loads(row["prompt_messages"])
    tools = json.loads(row["tools"]) if row.get("tools") else None
    response = {**json.loads(row["response_message"]), "role": "assistant"}
    kwargs = {"tools": tools or None, "tokenize": False}
    prompt_text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, **kwargs)
    full_text = tokenizer.apply_chat_template([*messages, response], add_generation_prompt=False, **kwargs)
    if not full_text.startswith(prompt_text):
        raise ValueError("template mismatch: the prompt render is not a prefix of prompt + response")
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    rest_ids = tokenizer(full_text[len(prompt_text):], add_special_tokens=False)["input_ids"]
    end = next((i for i, t in enumerate(rest_ids) if t in stop_ids), len(rest_ids) - 1)
    response_ids = rest_ids[: end + 1]
    if not prompt_ids or not response_ids:
        raise ValueError("template rendered an empty prompt or response")
    return prompt_ids, response_ids


def render_rows(rows: list[dict[str, Any]], tokenizer: Any) -> list[dict[str, Any]]:
    """One result per row: ids, or ``render_error`` saying why the row cannot be rendered."""
    stop_ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    out = []
    for row in rows:
        result: dict[str, Any] = {"rollout_id": row["rollout_id"], "step": row["step"]}
        try:
            result["prompt_token_ids"], result["response_token_ids"] = _render(row, tokenizer, stop_ids)
        except ValueError as exc:  # json.JSONDecodeError is one
            result["render_error"] = f"tokenizer: {str(exc).split(':')[0]}"
        except Exception as exc:  # noqa: BLE001 - a template error leaves the row out, counted by reason
            result["render_error"] = f"tokenizer: chat template failed ({type(exc).__name__})"
        out.append(result)
    return out
