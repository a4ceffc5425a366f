"""The export formats: which SQL file builds each, which files it may write, what its columns mean.

A format is data, not code: its rows come from ``export/sql/<sql>.sql`` (one statement, run by
DuckDB over the snapshot), and ``columns`` says where each output column came from; the dataset
card prints that table, so the provenance is written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MESSAGES = ("list of {role, content, tool_calls, tool_call_id, name}: the snapshot's OpenAI chat messages; "
             "content as text (text parts joined by a newline, images left out), tool-call arguments as the "
             "JSON string the model wrote")
_TOOLS = "`tools`: the OpenAI tool definitions the call was offered, as a JSON string (TRL json-loads it), or null"
_REWARD = "the snapshot column named by `--reward-column` (default `return`: the call's credit-assigned return)"


@dataclass(frozen=True)
class Format:
    """One ``--format`` value."""

    name: str
    sql: str  # export/sql/<sql>.sql
    file_types: tuple[str, ...]  # the first is the default
    summary: str  # one line for the dataset card
    columns: dict[str, str]  # output column -> where it came from
    consumer: str  # how to load it (markdown for the card; {out} is the export folder)
    line_column: str | None = None  # JSONL only: each row is this one JSON column, written as the line
    params: tuple[str, ...] = field(default=("reward_column",))
    metadata: bool = False  # write the snapshot's identity (content hash, id, credit) into the Parquet footer


_LOAD = 'from datasets import load_dataset\nds = load_dataset("{out}", split="train")'


def _code(text: str) -> str:
    return f"```python\n{text}\n```"


_POLARS = ('import polars as pl\nrows = pl.read_parquet("{out}/train.parquet")   # every column filled\n'
           'meta = pl.read_parquet_metadata("{out}/train.parquet")   # spanrl.content_hash, spanrl.snapshot_id, ...')

FORMATS: dict[str, Format] = {
    "parquet": Format(
        name="parquet", sql="flat", file_types=("parquet",), params=(), metadata=True,
        summary=("The snapshot as one flat Parquet file, readable without spanrl: every transition column, "
                 "`return` and `advantage` filled; the content hash in the file's metadata."),
        columns={
            "snapshot_id, rollout_id, task_id, trace_id, span_id, step, n_steps, agent_name, model":
                "the snapshot columns of the same name (docs/transitions.md)",
            "prompt_messages, tools, response_message": "JSON text: OpenAI chat messages, tool definitions, "
                                                        "the response message",
            "finish_reason": "why the engine stopped: stop, tool_calls, length (cut at max_tokens), ...; null if unrecorded",
            "prompt_token_ids, response_token_ids, response_logprobs, token_source, temperature":
                "the engine's token ids and log-probs where it recorded them (token_source = engine), else null",
            "final_reward, step_reward": "the rollout's reward; the AIR reward this call set off itself",
            "return, advantage": ("filled as spanrl's own readers fill them: the snapshot's advantages table applied with the "
                                  "snapshot's credit config (in the file metadata as `spanrl.config`)"),
            "is_last, source_files": "the snapshot columns of the same name",
        },
        consumer=_code(_POLARS) + "\n\nDuckDB: `SELECT * FROM '{out}/train.parquet'`; "
                                 "`SELECT * FROM parquet_kv_metadata('{out}/train.parquet')`.",
    ),
    "trl-sft": Format(
        name="trl-sft", sql="trl_sft", file_types=("parquet", "jsonl"),
        summary="TRL SFT, conversational: one row per LLM call, the prompt plus the response as the last turn.",
        columns={
            "messages": f"`prompt_messages` + `response_message` (role forced to assistant); {_MESSAGES}",
            "tools": _TOOLS,
            "rollout_id, task_id, step, agent_name": "the snapshot columns of the same name",
            "reward": _REWARD + "; rows below `--min-reward` are left out",
        },
        consumer=_code(_LOAD + "\n# trl.SFTTrainer(model=..., train_dataset=ds, args=trl.SFTConfig(...))"),
        params=("reward_column", "min_reward"),
    ),
    "trl-kto": Format(
        name="trl-kto", sql="trl_kto", file_types=("parquet", "jsonl"),
        summary="TRL KTO, conversational unpaired preference: prompt, completion, label from the reward.",
        columns={
            "prompt": f"`prompt_messages`; {_MESSAGES}",
            "completion": "`response_message` as a one-message list (role assistant)",
            "label": "`reward >= --threshold` (rows without reward are left out)",
            "tools": _TOOLS,
            "rollout_id, task_id, step, agent_name": "the snapshot columns of the same name",
            "reward": _REWARD,
        },
        consumer=_code(_LOAD + "\n# trl.KTOTrainer(model=..., train_dataset=ds, args=trl.KTOConfig(...))"),
        params=("reward_column", "threshold"),
    ),
    "trl-dpo": Format(
        name="trl-dpo", sql="trl_dpo", file_types=("parquet", "jsonl"),
        summary=("TRL DPO, conversational preference pairs between responses to the identical prompt "
                 "(same task, same step, same prompt messages and tools); the higher-reward one is chosen."),
        columns={
            "prompt": f"`prompt_messages` shared by both responses; {_MESSAGES}",
            "chosen": "`response_message` of the higher-reward row (one assistant message)",
            "rejected": "`response_message` of the lower-reward row",
            "tools": _TOOLS,
            "task_id, step, agent_name": "the snapshot columns (equal for both rows of the pair)",
            "chosen_rollout_id, rejected_rollout_id": "`rollout_id` of each side",
            "chosen_reward, rejected_reward": _REWARD + ", of each side (chosen > rejected)",
        },
        consumer=_code(_LOAD + "\n# trl.DPOTrainer(model=..., train_dataset=ds, args=trl.DPOConfig(...))"),
    ),
    "openai-ft": Format(
        name="openai-ft", sql="openai_ft", file_types=("jsonl",), line_column="example",
        summary="OpenAI chat fine-tuning JSONL: messages (+ tools); only the response has weight 1.",
        columns={
            "messages": ("`prompt_messages` + `response_message`, each reduced to the keys OpenAI's fine-tuning "
                         "schema allows for its role (content kept as is, images included); assistant turns "
                         "of the prompt get `weight: 0`, the response `weight: 1`; no null members"),
            "tools": "`tools` (OpenAI tool definitions), absent when the call had none",
        },
        consumer=("Upload `train.jsonl` as a fine-tuning file (purpose `fine-tune`); "
                  "or `load_dataset(\"{out}\", split=\"train\")`."),
        params=("reward_column", "min_reward"),
    ),
    "triplets": Format(
        name="triplets", sql="triplets", file_types=("parquet", "jsonl"),
        summary=("Agent Lightning-style triplets (one per LLM call): prompt/response token ids, reward, "
                 "metadata, for verl-style trainers."),
        columns={
            "prompt.token_ids": ("`prompt_token_ids` (the engine's) when the row has them; else the "
                                 "`--tokenizer`'s chat template over `prompt_messages` + `tools`"),
            "prompt.raw_content": "`prompt_messages` (JSON string)",
            "response.token_ids": ("`response_token_ids`; else the template's assistant turn up to and including "
                                   "the first end-of-turn token"),
            "response.raw_content": "`response_message` (JSON string)",
            "response.logprobs": "`response_logprobs` (engine rows only; null for rendered rows)",
            "reward": _REWARD,
            "metadata": ("rollout_id, task_id, trace_id, span_id, step, n_steps, is_last, agent_name, model, tools, "
                         "final_reward, return, advantage, step_reward, temperature, snapshot_id from the snapshot; "
                         "token_source = engine | tokenizer"),
        },
        consumer=_code(_LOAD + "\n# prompt['token_ids'], response['token_ids'], reward: one transition per row"),
    ),
}
