"""End to end with ``spanrl serve`` as the judge (the tiny random model from tests/helpers): a real
OpenAI-compatible server answers, its usage is counted, and its (random) text is rejected, never
turned into scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from tests.helpers.tiny_model import make_tiny_model
from tests.judge.lake import write_rollouts
from tests.judge.test_judge import ROLLOUTS
from tests.rollout.lake import ingest


@pytest.mark.slow  # ~17 s on a busy 2-core box (model build + CPU generation)
def test_spanrl_serve_as_the_judge(tmp_path: Path) -> None:
    from spanrl.serve.server import ServeConfig, serve_in_background

    data = tmp_path / "data"
    write_rollouts(data, ROLLOUTS)
    ingest(data, "--missing-reward", "zero")
    model = make_tiny_model(tmp_path / "judge-model")
    running = serve_in_background(ServeConfig(model=model, data=tmp_path / "serve", port=0, max_tokens=16,
                                              device="cpu", otlp_endpoint="none"))
    try:
        result = CliRunner().invoke(cli, ["judge", "--data", str(data), "--judge-url", running.url + "/v1",
                                          "--judge-model", "judge-model", "--retries", "1",
                                          "--max-tokens-per-trajectory", "100"])
    finally:
        running.stop()
    assert result.exit_code == 0, result.output
    assert "0 judged, 0 cached, 2 rejected" in result.output
    assert "spend: 4 call(s)" in result.output and "4 malformed answer(s), 0 failed call(s)" in result.output
    prompt_tokens = int(result.output.split("call(s), ")[1].split(" prompt")[0])
    assert prompt_tokens > 100  # the server's own usage, summed
    assert not list((data / "feedback").glob("judge-*.jsonl"))
