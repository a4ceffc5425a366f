"""``RolloutConfig``: what a ``spanrl rollout`` user sets (docs/architecture.md, CLI contract)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from spanrl.errors import InputError
from spanrl.rollout.process import OTLP_PROTOCOLS

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class RolloutConfig:
    """Every knob of one rollout run; validated at construction, errors say what to set instead."""

    tasks: Path = field(metadata={"help": "JSON lines: input, optional task_id and expected."})
    n: int = field(metadata={"help": "Samples per task (the group size for group advantages)."})
    command: list[str] = field(metadata={"help": "The agent command; {input} and {task_id} are replaced."})
    data: Path = field(default=Path("spanrl-data"), metadata={"help": "Data root."})
    policy_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible /v1 URL the agent calls."})
    model: Path | None = field(default=None, metadata={"help": "Without --policy-url: start `spanrl serve` "
                                                               "with this model and the latest adapter."})
    temperature: float | None = field(default=None, metadata={"help": "The started server's forced temperature."})
    otlp: str | None = field(default=None, metadata={"help": "OTLP endpoint; default: an embedded collector."})
    otlp_protocol: str | None = field(default=None, metadata={
        "help": "Protocol of --otlp: http/protobuf, http/json or grpc (default: grpc when its port is 4317, "
                "else http/protobuf); set for the agents with OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]PROTOCOL."})
    served_model_names: list[str] = field(default_factory=list, metadata={
        "help": "With --model: names the started server answers to (`spanrl serve --served-model-name`), "
                "e.g. the model name an agent hard-codes."})
    concurrency: int = field(default=8, metadata={"help": "Agent processes at once."})
    timeout_s: float = field(default=120.0, metadata={"help": "Wall time per attempt; the process group is killed."})
    retries: int = field(default=1, metadata={"help": "Extra attempts for a failed or timed-out sample."})
    score: str | None = field(default=None, metadata={"help": "Scorer command: task+output JSON in, a number out."})
    run_id: str | None = field(default=None, metadata={"help": "Resumable run name (default: tasks file + adapter)."})
    adapter_id: str | None = field(default=None, metadata={"help": "The policy's adapter id for the default run id."})
    serve_adapter: str | None = field(default=None, metadata={
        "help": "With --model: what the started server serves: LATEST (default), an adapter id of DATA/adapters, "
                "or base (no adapter); `spanrl eval` pins each policy with it."})
    retry_failed: bool = field(default=False, metadata={"help": "On resume, try again samples that failed before."})
    purpose: str | None = field(default=None, metadata={
        "help": "eval: the rollouts are held out (spanrl.rollout.purpose = eval on the runner's and the agent's "
                "spans), so training snapshots leave them out, as `spanrl eval`'s; None: training rollouts."})
    threads: int | None = field(default=None, metadata={
        "help": "With --model: torch CPU threads of the started server (`spanrl serve --threads`)."})
    kill_grace_s: float = field(default=3.0, metadata={"help": "SIGTERM -> SIGKILL delay for a timed-out group."})
    env: dict[str, str] = field(default_factory=dict, metadata={
        "help": "Extra variables for every agent process (library callers such as the demo; on the command "
                "line, prefix the command with `env K=V`). The runner's own variables win."})

    def __post_init__(self) -> None:
        self.data, self.tasks = Path(self.data), Path(self.tasks)
        if not self.command:
            raise InputError("give the agent command after `--`, e.g. spanrl rollout --tasks t.jsonl --n 4 -- "
                             "python agent.py {input}")
        if self.n < 1:
            raise InputError(f"--n must be at least 1, got {self.n}")
        if self.concurrency < 1:
            raise InputError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s <= 0:
            raise InputError(f"--timeout must be positive, got {self.timeout_s}s")
        if self.retries < 0:
            raise InputError(f"--retries must be >= 0, got {self.retries}")
        if self.run_id is not None and not _RUN_ID.match(self.run_id):
            raise InputError(f"--run-id {self.run_id!r}: use letters, digits, '.', '_' and '-' (at most 64)")
        if self.policy_url is None and self.model is None:
            raise InputError("the agent needs a policy: pass --policy-url URL (an OpenAI-compatible /v1 endpoint, "
                             "e.g. vLLM or `spanrl serve`), or --model PATH to start `spanrl serve` with the "
                             "latest adapter")
        if self.policy_url is not None and self.model is not None:
            raise InputError("--policy-url and --model exclude each other: the runner starts a server only "
                             "when no --policy-url is given")
        if self.otlp_protocol is not None and self.otlp_protocol not in OTLP_PROTOCOLS:
            raise InputError(f"--otlp-protocol {self.otlp_protocol!r}: use one of {', '.join(OTLP_PROTOCOLS)}")
        if self.otlp_protocol is not None and self.otlp is None:
            raise InputError("--otlp-protocol describes --otlp URL; the embedded collector (no --otlp) speaks "
                             "http/protobuf, which the runner sets for the agents itself")
        self.served_model_names = list(self.served_model_names)
        if self.purpose == "train":
            self.purpose = None
        if self.purpose not in (None, "eval"):
            raise InputError(f"--purpose {self.purpose!r}: use eval (held out of training) or train (the default)")
        if self.threads is not None and self.threads < 1:
            raise InputError(f"--threads must be at least 1, got {self.threads}")
        if self.threads is not None and self.policy_url is not None:
            raise InputError("--threads sets the server the runner starts (--model); for your own server start it "
                             "with `spanrl serve --threads N`")
        if self.served_model_names and self.policy_url is not None:
            raise InputError("--served-model-name names the server the runner starts (--model); for your own "
                             "server start it with that name (`spanrl serve --served-model-name NAME`, "
                             "vLLM `--served-model-name`)")
        if self.serve_adapter is not None and self.policy_url is not None:
            raise InputError("serve_adapter picks what the started server (--model) serves; a --policy-url server "
                             "serves what it was started with")
        if self.temperature is not None and self.policy_url is not None:
            raise InputError("--temperature sets the server the runner starts (--model); for your own server "
                             "start it with `spanrl serve --temperature T` (vLLM: set it in the agent)")
