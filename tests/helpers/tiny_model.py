"""A tiny random chat model on disk, built locally (no hub): tokenizer + chat template + weights.

``make_tiny_model(path)`` writes a folder that ``AutoTokenizer.from_pretrained`` and
``AutoModelForCausalLM.from_pretrained`` load like any real local checkpoint: a byte-level BPE
tokenizer (~512 tokens, trained here on a small built-in corpus of chat text, digits and JSON),
a ChatML template with tools and ``<tool_call>{json}</tool_call>`` rendering (Qwen/SmolLM style),
and a random Llama (hidden 64, 2 layers, 4 heads) initialised from a fixed seed.

Why a cache: training the tokenizer and writing safetensors costs ~1 s; tests call this many times.
The first call in a process (or machine) builds into a cache folder keyed by the arguments and the
helper's version, then every call copies that folder. Same arguments -> byte-identical files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

HELPER_VERSION = "1"
VOCAB_SIZE = 512
SEED = 1234

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Not special: they must survive decode(skip_special_tokens=True), like Qwen's.
EXTRA_TOKENS = ["<tool_call>", "</tool_call>", "<tools>", "</tools>"]

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first %}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message['content'] %}{{- message['content'] }}{%- endif %}"
    "{%- if message['tool_calls'] %}"
    "{%- for tool_call in message['tool_calls'] %}"
    "{%- if tool_call['function'] is defined %}{%- set tool_call = tool_call['function'] %}{%- endif %}"
    "{%- if (loop.first and message['content']) or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tool_call['name'] + '\", \"arguments\": ' }}"
    "{%- if tool_call['arguments'] is string %}{{- tool_call['arguments'] }}"
    "{%- else %}{{- tool_call['arguments'] | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

_CORPUS = [
    "You are a helpful assistant.",
    "What is the weather in Paris today? It is sunny and 21 degrees.",
    "Please add 12 and 30. The answer is 42.",
    "Compute 7 * 8 = 56, 100 / 4 = 25, 3.14159 and -17.5e3.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 42 99 100 256 512 1024 2048 65535",
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
    '{"type": "function", "function": {"name": "add", "description": "Add two numbers", '
    '"parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, '
    '"required": ["a", "b"]}}}',
    '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello!"}]',
    "# Tools\n\nYou may call one or more functions to assist with the user query.",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:",
    "system\nuser\nassistant\ntool\n",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "Hello! How can I help you today? I'm sorry, I can't do that. Sure, here you go: ",
    "Let me search for that. Found 3 results: apple, banana, cherry.",
    "Error: tool failed with status 500 (timeout). Retrying... done; result = true, false, null",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))  # 5",
    "Question: which city is the capital of France? Answer: Paris.",
    "Task 17: count the words in 'to be or not to be' -> 6 words.",
    "Thought: I should call the calculator. Action: calculator(expression='2+2'). Observation: 4.",
    "mean, sum, count, min, max, avg: [1, 2, 3], {a: 1}, (x, y), <tag>, 'quote', \"double\"",
]


def _corpus() -> list[str]:
    return _CORPUS * 8


def _build_tokenizer(folder: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(EXTRA_TOKENS),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=1024,
        clean_up_tokenization_spaces=False,
    )
    fast.add_tokens(EXTRA_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return fast


def _build_model(folder: Path, tokenizer, arch: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    if arch == "llama":
        config = LlamaConfig(**common)
    elif arch == "qwen2":
        config = Qwen2Config(**common)
    else:
        raise ValueError(f"arch {arch!r}: choose 'llama' or 'qwen2'")
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder, safe_serialization=True)


def _cache_root() -> Path:
    root = os.environ.get("SPANRL_TINY_MODEL_CACHE")
    return Path(root) if root else Path(tempfile.gettempdir()) / f"spanrl-tiny-model-{os.getuid()}"


def _cached(arch: str) -> Path:
    """Build once into a cache folder (temp dir + rename, so concurrent builders are safe)."""
    key = hashlib.sha256(f"{HELPER_VERSION}|{arch}|{VOCAB_SIZE}|{SEED}|{CHAT_TEMPLATE}".encode()).hexdigest()[:16]
    final = _cache_root() / f"{arch}-{key}"
    if (final / "model.safetensors").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{arch}-", dir=final.parent))
    try:
        tokenizer = _build_tokenizer(tmp)
        _build_model(tmp, tokenizer, arch)
        try:
            os.rename(tmp, final)
        except OSError:  # another process won the race; use its copy
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def make_tiny_model(path: Path, arch: str = "llama") -> Path:
    """Write a tiny random chat model (tokenizer, template, safetensors weights) into ``path``.

    ``arch`` is ``"llama"`` (default) or ``"qwen2"``. Returns ``path``. Deterministic: the same
    arguments give the same files on every call.
    """
    path = Path(path)
    shutil.copytree(_cached(arch), path, dirs_exist_ok=True)
    return path


def transition_row(**values: object) -> dict[str, object]:
    """One transition row with every schema column (None unless given); ``snapshot_id`` is filled on write."""
    from spanrl.transitions.schema import COLUMNS

    row: dict[str, object] = dict.fromkeys(COLUMNS)
    row.update(snapshot_id="", step=0, n_steps=1, token_source="text", is_last=True)
    row.update(values)
    return row


def write_rows_snapshot(data: Path, rows: list[dict[str, object]]) -> Path:
    """Write rows (from ``transition_row``) as a snapshot under ``data`` with the real writer."""
    import pyarrow as pa

    from spanrl.transitions import TRANSITION_SCHEMA, write_snapshot

    table = pa.Table.from_pylist(rows, schema=TRANSITION_SCHEMA)
    return write_snapshot(data, table, config={"source": "tests.helpers.tiny_model"})


def tiny_rollout_rows(
    tokenizer: object,
    n_tasks: int = 3,
    rollouts_per_task: int = 2,
    calls_per_rollout: int = 2,
    engine: bool = True,
    logprobs: bool = False,
) -> list[dict[str, object]]:
    """Synthetic multi-call rollouts: a user asks to add two numbers, the assistant calls a tool,
    then answers. Rollout r of each task gets reward r (so advantages differ within a task).

    ``engine=True`` fills the token-id columns from the chat template (as an engine would see them);
    ``logprobs=True`` adds behaviour log-probs (-1.0 per token).
    """
    import json

    tools = [{"type": "function", "function": {"name": "add", "description": "Add two numbers",
              "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]
    rows = []
    for task in range(n_tasks):
        for r in range(rollouts_per_task):
            reward = float(r)
            adv = reward - (rollouts_per_task - 1) / 2
            messages: list[dict[str, object]] = [
                {"role": "system", "content": "You add numbers."},
                {"role": "user", "content": f"What is {task} + {task + 7}?"},
            ]
            for step in range(calls_per_rollout):
                last = step == calls_per_rollout - 1
                if last:
                    response = {"role": "assistant", "content": f"The answer is {2 * task + 7 + (0 if r else 1)}."}
                else:
                    args = json.dumps({"a": task, "b": task + 7})
                    response = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"call{step}", "type": "function", "function": {"name": "add", "arguments": args}}]}
                row = transition_row(
                    rollout_id=f"t{task}-r{r}", task_id=f"t{task}", trace_id=f"{task:016x}{r:016x}",
                    span_id=f"{step:016x}", step=step, n_steps=calls_per_rollout, agent_name="adder",
                    model="tiny", prompt_messages=json.dumps(messages), tools=json.dumps(tools),
                    response_message=json.dumps(response), token_source="engine" if engine else "text",
                    temperature=1.0, final_reward=reward, step_reward=0.0, **{"return": reward},
                    advantage=adv, is_last=last, source_files=["synthetic"],
                )
                if engine:
                    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                                           tokenize=False)
                    full = tokenizer.apply_chat_template([*messages, response], tools=tools, tokenize=False)
                    # the token diff of the two renders, tokenised whole (as an engine's prompt + sample)
                    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
                    full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
                    assert full_ids[: len(p_ids)] == p_ids
                    rest = full_ids[len(p_ids):]
                    r_ids = rest[: rest.index(tokenizer.eos_token_id) + 1]
                    row.update(prompt_token_ids=p_ids, response_token_ids=r_ids)
                    if logprobs:
                        row["response_logprobs"] = [-1.0] * len(r_ids)
                rows.append(row)
                messages = [*messages, response]
                if not last:
                    messages.append({"role": "tool", "tool_call_id": f"call{step}", "content": str(2 * task + 7)})
    return rows
