"""OpenAI's documented line schema for chat fine-tuning files, as a JSON Schema.

Written from the ``FineTuneChatRequestInput`` object of OpenAI's API reference (openai-openapi):
``messages`` (system, developer, user, assistant, tool messages; the assistant one is
``FineTuneChatCompletionRequestAssistantMessage`` with ``weight`` 0|1), ``tools`` (function tools),
``parallel_tool_calls``. Stricter than the reference in one way: unknown keys are refused
(``additionalProperties: false``), so an export cannot carry fields the service would not read.
"""

from __future__ import annotations

_TEXT_PART = {"type": "object", "required": ["type", "text"], "additionalProperties": False,
              "properties": {"type": {"const": "text"}, "text": {"type": "string"}}}
_IMAGE_PART = {"type": "object", "required": ["type", "image_url"], "additionalProperties": False,
               "properties": {"type": {"const": "image_url"},
                              "image_url": {"type": "object", "required": ["url"],
                                            "properties": {"url": {"type": "string"},
                                                           "detail": {"enum": ["auto", "low", "high"]}}}}}
_TEXT_CONTENT = {"anyOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": _TEXT_PART}]}
_USER_CONTENT = {"anyOf": [{"type": "string"},
                           {"type": "array", "minItems": 1, "items": {"anyOf": [_TEXT_PART, _IMAGE_PART]}}]}
_TOOL_CALL = {"type": "object", "required": ["id", "type", "function"], "additionalProperties": False,
              "properties": {"id": {"type": "string"}, "type": {"const": "function"},
                             "function": {"type": "object", "required": ["name", "arguments"],
                                          "additionalProperties": False,
                                          "properties": {"name": {"type": "string"},
                                                         "arguments": {"type": "string"}}}}}


def _message(role: str, content: dict, required: list[str], **extra: dict) -> dict:
    return {"type": "object", "required": ["role", *required], "additionalProperties": False,
            "properties": {"role": {"const": role}, "content": content, **extra}}


MESSAGE = {"oneOf": [
    _message("system", _TEXT_CONTENT, ["content"], name={"type": "string"}),
    _message("developer", _TEXT_CONTENT, ["content"], name={"type": "string"}),
    _message("user", _USER_CONTENT, ["content"], name={"type": "string"}),
    _message("assistant", {"anyOf": [_TEXT_CONTENT, {"type": "null"}]}, [], name={"type": "string"},
             refusal={"type": ["string", "null"]}, tool_calls={"type": "array", "items": _TOOL_CALL},
             weight={"enum": [0, 1]}),
    _message("tool", _TEXT_CONTENT, ["content", "tool_call_id"], tool_call_id={"type": "string"}),
]}

TOOL = {"type": "object", "required": ["type", "function"], "additionalProperties": False,
        "properties": {"type": {"const": "function"},
                       "function": {"type": "object", "required": ["name"], "additionalProperties": False,
                                    "properties": {"name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                                                   "description": {"type": "string"},
                                                   "parameters": {"type": "object"},
                                                   "strict": {"type": ["boolean", "null"]}}}}}

LINE = {"type": "object", "required": ["messages"], "additionalProperties": False,
        "properties": {"messages": {"type": "array", "minItems": 1, "items": MESSAGE},
                       "tools": {"type": "array", "items": TOOL},
                       "parallel_tool_calls": {"type": "boolean"}}}


def check_example(example: dict) -> None:
    """Raise jsonschema.ValidationError unless ``example`` is a valid line; plus the rules the
    reference states in prose: at least one assistant message, and an assistant message needs
    content or tool calls."""
    import jsonschema

    jsonschema.validate(example, LINE)
    assistants = [m for m in example["messages"] if m["role"] == "assistant"]
    if not assistants:
        raise jsonschema.ValidationError("no assistant message to train on")
    for m in assistants:
        if m.get("content") is None and not m.get("tool_calls"):
            raise jsonschema.ValidationError(f"assistant message without content or tool_calls: {m}")
