"""What a ``spanrl rollout`` (``RolloutConfig``, ``[rollout]``) or ``spanrl tasks`` (``TasksConfig``,
``[tasks]``) user sets (docs/architecture.md, CLI contract and "Configuration").

Every field is a ``spanrl.config.knob``: the one home of its default, help text, choices and flag; the
commands' flags are generated from them (``ROLLOUT_FLAGS``, ``TASKS_FLAGS``) and ``spanrl.config.resolve``
fills what no flag gave from ``$SPANRL_DATA``, the command's section of ``spanrl.toml``, then the field.
``AgentRunConfig`` holds the knobs of running an agent over a tasks file that ``spanrl eval`` shares
(``spanrl.evaluate.config.EvalConfig``), so ``--concurrency``, ``--timeout``, ``--otlp``... have one home.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import click

from spanrl.config import check_choices, knob
from spanrl.errors import InputError
from spanrl.options import DEFAULT_DATA, parse_duration
from spanrl.rollout.process import OTLP_PROTOCOLS

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
PURPOSES = ("train", "eval")
FILE = click.Path(dir_okay=False, path_type=Path)
CONFIG_HELP = "spanrl.toml whose [{}] section sets these defaults (default DATA/spanrl.toml, then ./spanrl.toml)."


@dataclass(kw_only=True)
class AgentRunConfig:
    """The knobs of running an unmodified agent command over a tasks file: `spanrl rollout`'s and `spanrl eval`'s."""

    tasks: Path = knob(help="JSON lines: input (text), optional task_id and expected.", required=True, click_type=FILE)
    command: list[str] = knob(help="The agent command (after `--`); {input} and {task_id} in it are replaced.")
    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    otlp: str | None = knob(None, "OTLP endpoint for the agent's spans (default: the collector already writing DATA, "
                            "a running `spanrl gateway`'s or `spanrl collector`, else an embedded one this run starts, "
                            "writing DATA/otel, which also counts the attempts that sent no span).")
    served_model_names: list[str] = knob([], "With --model: a name the started server answers to, e.g. the model an agent "
                                         "hard-codes (repeatable; `spanrl serve --served-model-name`).",
                                         flag="--served-model-name", multiple=True, metavar="NAME")
    concurrency: int = knob(8, "Agent processes at once.")
    timeout_s: float = knob(120.0, "Wall time per attempt; kills its process group.", flag="--timeout",
                            parse=parse_duration, show="120s")
    score: str | None = knob(None, 'Scorer command: reads {"task": ..., "output": ...} on stdin, prints a number '
                             "(a feedback row).")
    threads: int | None = knob(None, "With --model: torch CPU threads of the started server "
                               "(`spanrl serve --threads`; `spanrl eval` starts one per policy).")
    env: dict[str, str] = knob({}, "Extra variables for every agent process (library callers such as the demo; on the "
                               "command line, prefix the command with `env K=V`). The runner's own variables win.")

    def __post_init__(self) -> None:
        self.data, self.tasks = Path(self.data), Path(self.tasks)
        self.command, self.served_model_names = list(self.command), list(self.served_model_names)
        self.timeout_s = float(self.timeout_s)
        check_choices(self)
        if self.concurrency < 1:
            raise InputError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s <= 0:
            raise InputError(f"--timeout must be positive, got {self.timeout_s}s")
        if self.threads is not None and self.threads < 1:
            raise InputError(f"--threads must be at least 1, got {self.threads}")


@dataclass(kw_only=True)
class RolloutConfig(AgentRunConfig):
    """Every knob of one rollout run; validated at construction, errors say what to set instead."""

    n: int = knob(help="Samples per task (the group size for group advantages).", required=True)
    config_file: Path | None = knob(None, CONFIG_HELP.format("rollout"), flag="--config", click_type=FILE)
    policy_url: str | None = knob(None, "OpenAI-compatible /v1 URL the agent calls (OPENAI_BASE_URL; its root is "
                                  "ANTHROPIC_BASE_URL).")
    model: Path | None = knob(None, "Without --policy-url: start `spanrl serve --model PATH` on the latest adapter.",
                              click_type=click.Path(path_type=Path))
    temperature: float | None = knob(None, "With --model: the started server samples at this temperature whatever the "
                                     "agent asks.")
    otlp_protocol: str | None = knob(None, "Protocol of --otlp, set for the agents with "
                                     "OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]PROTOCOL (default: grpc when its port is 4317, "
                                     "else http/protobuf).", choices=OTLP_PROTOCOLS)
    retries: int = knob(1, "Extra attempts for a failed or timed-out sample.")
    run_id: str | None = knob(None, "Run name; re-running it skips finished rollouts (default: from the tasks' content, "
                              "the command and the policy: its URL and adapter, or the started model and adapter).")
    adapter_id: str | None = knob(None, "The policy's adapter id for the default run id (default: asked from the server).")
    serve_adapter: str | None = knob(None, "With --model: what the started server serves: LATEST (default), an adapter "
                                     "id of DATA/adapters, or base (no adapter); `spanrl eval` pins each policy with it.")
    retry_failed: bool = knob(False, "On resume, try again samples that used up their attempts.")
    purpose: str | None = knob("train", "eval: hand-made baseline or held-out rollouts, tagged "
                               "spanrl.rollout.purpose=eval on the runner's and the agent's spans (as `spanrl eval`'s) "
                               "so training snapshots leave them out.", choices=PURPOSES)
    kill_grace_s: float = knob(3.0, "SIGTERM -> SIGKILL delay for a timed-out process group.")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.command:
            raise InputError("give the agent command after `--`, e.g. spanrl rollout --tasks t.jsonl --n 4 -- "
                             "python agent.py {input}")
        if self.n < 1:
            raise InputError(f"--n must be at least 1, got {self.n}")
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
        if self.otlp_protocol is not None and self.otlp is None:
            raise InputError("--otlp-protocol describes --otlp URL; the embedded collector (no --otlp) speaks "
                             "http/protobuf, which the runner sets for the agents itself")
        if self.purpose == "train":
            self.purpose = None  # None: training rollouts
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


# the flags of `spanrl rollout`, in --help order (--data is the shared data_option)
ROLLOUT_FLAGS = ("tasks", "n", "policy_url", "model", "temperature", "otlp", "otlp_protocol", "served_model_names",
                 "concurrency", "timeout_s", "retries", "score", "run_id", "adapter_id", "retry_failed", "purpose",
                 "threads", "config_file")


@dataclass
class TasksConfig:
    """What ``spanrl tasks`` exports: past user inputs as tasks.jsonl."""

    data: Path = knob(Path(DEFAULT_DATA), "Data root.", env="SPANRL_DATA")
    config_file: Path | None = knob(None, CONFIG_HELP.format("tasks"), flag="--config", click_type=FILE)
    sql: str | None = knob(None, "Read-only query selecting rollouts (a rollout_id column) or tasks (an input column); "
                           "default: every complete rollout.")
    out: Path | None = knob(None, "Write tasks.jsonl here (default: stdout).", click_type=FILE)

    def __post_init__(self) -> None:
        self.data = Path(self.data)
        self.out = Path(self.out) if self.out is not None else None


TASKS_FLAGS = ("sql", "out", "config_file")
