"""One chat renderer for ``spanrl serve`` and the trainer's text path.

Why one: the trainer re-renders stored OpenAI messages to learn from calls it has no engine token ids
for. If it rendered them differently from the server (raw ``apply_chat_template`` on ``content: null``
tool-call messages, tools passed to a template that ignores them), it would train the model on a
prompt it never saw, or fail outright: SmolLM2's plain ChatML raises on ``content: null``. So the
server's ``render_prompt`` lives here (``serve`` may import ``trainer``, not the reverse; tests/test_layout.py)
and ``render_turn`` renders prompt + response in the same format the server produced it in.

Formats: a template that renders ``tools`` itself (Qwen2.5, Hermes, our tiny test model) gets them
and structured tool calls (argument objects). A template that ignores ``tools`` (SmolLM2-135M-Instruct)
gets a Hermes-style tool block appended to its system message, calls as ``<tool_call>{json}</tool_call>``
text and results as ``<tool_response>`` text: what the demo model is prompted to write and what serve
parses. A tools-aware template that raises on structured calls falls back to that text format (the
whole prompt when the prompt raises, else the reply alone: the text the model wrote), in both paths alike. Every message is reduced to plain string content first, so any template that
renders ``message['content']`` renders null-content calls, tool results and content-part lists.

Stored messages come in the shapes instrumentations wrote (``ingest/sql/llm_macros.sql`` normalises
most to OpenAI chat shape): content strings or part lists, tool calls wrapped in ``function`` or
bare (LangChain ``args``), arguments as JSON strings or objects, tools as OpenAI objects, bare function
dicts (``parameters`` / ``input_schema``) or JSON text. All read the same here.
"""

from __future__ import annotations

import json
from typing import Any

_FALLBACK_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_FALLBACK_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)
_DEFAULT_SYSTEM = "You are a helpful assistant."
_ROLES = {"developer": "system", "human": "user", "ai": "assistant", "model": "assistant"}
_TEXT_PARTS = {"text", "input_text", "output_text"}
NO_TEMPLATE = "tokenizer has no chat template"


class NoChatTemplate(ValueError):
    """The tokenizer carries no chat template: nothing to render with (a base model, a stripped tokenizer)."""


def template_handles_tools(template: Any) -> bool:
    """True when the chat template renders ``tools`` itself (so we must not add our block)."""
    if isinstance(template, dict):  # several named templates (e.g. "default" and "tool_use")
        template = " ".join(str(t) for t in template.values())
    return bool(template) and "tools" in template


def text_of(content: Any) -> str:
    """Content may be None, a string, or a list of parts (OpenAI, Responses, bare strings); templates want a string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in _TEXT_PARTS:
                text = part.get("text", part.get("content"))
                out.append(text if isinstance(text, str) else "")
        return "".join(out)
    return json.dumps(content, ensure_ascii=False)


def arguments_object(arguments: Any) -> Any:
    """JSON-string arguments -> object (Qwen-style templates ``tojson`` them); none or empty -> ``{}`` (a
    handoff's call); bad JSON stays a string."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _function(call: Any) -> dict[str, Any]:
    """A tool call's function part: ``{"function": {...}}`` (OpenAI) or the call itself (bare, LangChain)."""
    if not isinstance(call, dict):
        raise TypeError(f"a tool call must be an object, not {type(call).__name__}")
    fn = call.get("function")
    return fn if isinstance(fn, dict) else call


def _call_arguments(fn: dict[str, Any]) -> Any:
    return arguments_object(fn["arguments"] if "arguments" in fn else fn.get("args"))


def tool_call_text(call: dict[str, Any]) -> str:
    """One call as the Hermes text the demo model writes and ``parse_tool_calls`` reads back."""
    fn = _function(call)
    body = json.dumps({"name": fn.get("name"), "arguments": _call_arguments(fn)}, ensure_ascii=False)
    return "<tool_call>\n" + body + "\n</tool_call>"


def normalise_tools(tools: Any) -> list[dict[str, Any]] | None:
    """Tool definitions -> OpenAI ``{"type": "function", "function": {...}}`` objects, or None for none.

    OpenAI-shaped entries are kept exactly as they are (the server renders what the client sent, and
    ids must not change); bare function dicts are wrapped; JSON text is parsed."""
    if isinstance(tools, str):
        tools = json.loads(tools) if tools.strip() else None
    if isinstance(tools, dict):
        tools = [tools]
    if not tools:
        return None
    if not isinstance(tools, list):
        raise TypeError(f"tools must be a list of tool objects, not {type(tools).__name__}")
    out = []
    for tool in tools:
        if isinstance(tool, str):
            tool = json.loads(tool)
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict) or not isinstance(tool.get("name"), str):
            out.append(tool)
            continue
        fn: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description") is not None:
            fn["description"] = tool["description"]
        for key in ("parameters", "input_schema", "inputSchema", "parameters_json_schema"):
            if tool.get(key) is not None:
                fn["parameters"] = tool[key]
                break
        out.append({"type": "function", "function": fn})
    return out or None


def normalise_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                       template_tools: bool) -> list[dict[str, Any]]:
    """OpenAI-ish chat messages -> what the chat template can render (every content a string).

    With ``template_tools`` the tool calls stay structured (arguments as objects). Without it, calls
    are written as Hermes text; with tools in the request, tool results are wrapped in
    ``<tool_response>`` and the tool block goes into the system message.
    """
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise TypeError(f"message {i} is a {type(msg).__name__}, not an object")
        role = msg.get("role") or msg.get("type")
        role = _ROLES.get(role, role)
        item: dict[str, Any] = {"role": role, "content": text_of(msg.get("content"))}
        calls = msg.get("tool_calls") or []
        if isinstance(calls, str):
            calls = json.loads(calls)
        if role == "assistant" and calls:
            if template_tools:
                item["tool_calls"] = [{"type": "function", "function": {
                    "name": _function(c).get("name"), "arguments": _call_arguments(_function(c))}} for c in calls]
            else:
                parts = [item["content"]] if item["content"] else []
                item["content"] = "\n".join(parts + [tool_call_text(c) for c in calls])
        if role == "tool":
            if msg.get("tool_call_id"):
                item["tool_call_id"] = msg["tool_call_id"]
            if not template_tools and tools:
                item["content"] = f"<tool_response>\n{item['content']}\n</tool_response>"
        out.append(item)
    if tools and not template_tools:
        block = _FALLBACK_TOOLS_HEADER + "".join(
            "\n" + json.dumps(t, ensure_ascii=False) for t in tools) + _FALLBACK_TOOLS_FOOTER
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": out[0]["content"] + block}
        else:
            out.insert(0, {"role": "system", "content": _DEFAULT_SYSTEM + block})
    return out


def _apply(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
           structured: bool, generation_prompt: bool) -> str:
    kwargs: dict[str, Any] = {"add_generation_prompt": generation_prompt, "tokenize": False}
    if tools and structured:
        kwargs["tools"] = tools
    return tokenizer.apply_chat_template(normalise_messages(messages, tools, structured), **kwargs)


def _prompt_text(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, bool]:
    """(prompt text, structured?): the format is chosen on the prompt, as the server chose it."""
    template = getattr(tokenizer, "chat_template", None)
    if template is None:
        raise NoChatTemplate(NO_TEMPLATE)
    if not template_handles_tools(template):
        return _apply(tokenizer, messages, tools, False, True), False
    try:
        return _apply(tokenizer, messages, tools, True, True), True
    except Exception as exc:  # noqa: BLE001 - a tools template that rejects our calls: the text format
        first = exc
    try:
        return _apply(tokenizer, messages, tools, False, True), False
    except Exception:  # noqa: BLE001 - the structured attempt's error is the one that explains it
        raise first from None


def tokenize(tokenizer: Any, text: str) -> list[int]:
    """Rendered text -> ids; the template wrote the special tokens, so none are added."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def render_prompt_text(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> str:
    """The prompt text of a chat request: the template with the generation prompt appended."""
    return _prompt_text(tokenizer, messages, normalise_tools(tools))[0]


def render_prompt(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> list[int]:
    """Prompt token ids for a chat request: the exact ids the server feeds the model (and its span reports)."""
    return tokenize(tokenizer, render_prompt_text(tokenizer, messages, tools))


def render_turn(tokenizer: Any, messages: list[dict[str, Any]], tools: Any,
                response: dict[str, Any]) -> tuple[str, str]:
    """(prompt text, prompt + response text) for training: the prompt exactly as ``render_prompt``
    renders it, and the assistant ``response`` (maybe ``content: null`` + ``tool_calls``) in the same
    format, so its tool calls read as the text the server parsed them from."""
    tools = normalise_tools(tools)
    prompt, structured = _prompt_text(tokenizer, messages, tools)
    response = {**response, "role": "assistant"}
    try:
        return prompt, _apply(tokenizer, [*messages, response], tools, structured, False)
    except Exception as exc:  # noqa: BLE001 - retried below, re-raised when that fails too
        if not structured:
            raise
        first = exc
    # a tools template that takes the prompt but rejects structured calls in the reply: the reply as
    # the text the model wrote and serve parsed (calls as <tool_call> text), the prompt as it was shown
    as_text = normalise_messages([response], None, template_tools=False)[0]
    try:
        return prompt, _apply(tokenizer, [*messages, as_text], tools, structured, False)
    except Exception:  # noqa: BLE001 - the structured attempt's error is the one that explains it
        raise first from None


def failure_reason(exc: BaseException) -> str:
    """A short, countable reason for a render that failed: the exception type and the first 80
    characters of its message (no row content beyond that), or the missing template by name."""
    if isinstance(exc, NoChatTemplate):
        return NO_TEMPLATE
    message = " ".join(str(exc).split())
    message = message if len(message) <= 80 else message[:77] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
