"""``--served-model-name`` aliases (vLLM's flag, repeatable): an agent that hard-codes its model name
(``gpt-4o-mini``) works against ``spanrl serve``, /v1/models lists every name that works and no
other, and an unknown name is a 404 that names the flag."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanrl.cli import cli
from spanrl.errors import InputError
from spanrl.serve.server import ServeConfig, serve_in_background
from tests.helpers.tiny_model import make_tiny_model


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    model = make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-chat")
    exporter = InMemorySpanExporter()
    config = ServeConfig(model=model, data=tmp_path_factory.mktemp("data"), port=0, max_tokens=4, device="cpu",
                         served_model_names=("tiny", "gpt-4o-mini", "tiny"))
    running = serve_in_background(config, span_exporter=exporter)
    yield openai.OpenAI(base_url=running.url + "/v1", api_key="unused", max_retries=0, timeout=60), exporter, model
    running.stop()


def test_an_alias_answers_and_is_recorded_as_asked(served) -> None:
    client, exporter, _ = served
    resp = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert resp.model == "gpt-4o-mini"
    (span,) = [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.response.id") == resp.id]
    assert span.attributes["gen_ai.request.model"] == "gpt-4o-mini"


def test_models_lists_every_name_once(served) -> None:
    client, _, model = served
    listed = client.models.list().data
    assert [m.id for m in listed] == ["tiny", "gpt-4o-mini"]
    assert all(getattr(m, "root", None) == str(model) for m in listed)


def test_an_unknown_name_is_a_404_naming_the_flag(served) -> None:
    client, _, _ = served
    with pytest.raises(openai.NotFoundError, match="--served-model-name gpt-4o "):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def test_the_flag_is_repeatable_on_the_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got: list[ServeConfig] = []
    monkeypatch.setattr("spanrl.serve.server.run_server", lambda config: got.append(config))
    result = CliRunner().invoke(cli, ["serve", "--model", str(tmp_path), "--data", str(tmp_path),
                                      "--served-model-name", "mine", "--served-model-name", "gpt-4o-mini"])
    assert result.exit_code == 0, result.output
    assert (got[0].served_model_name, got[0].served_model_aliases) == ("mine", ("gpt-4o-mini",))
    with pytest.raises(InputError, match="--served-model-name is empty"):
        ServeConfig(model=tmp_path, served_model_names=("mine", " "))
