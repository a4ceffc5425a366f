"""``spanrl gateway --prompts`` (a real subprocess) in front of a fake upstream, called by the real
``openai`` and ``anthropic`` SDKs: each call's system prompt is replaced by its agent's LATEST (matched
by the x-spanrl-agent header, the model, or the original prompt's sha256), a pinned URL applies a
staged version, and after ``spanrl ingest`` the lake has ``prompt_version`` in llm_calls and rollouts."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from spanrl.prompts.scoring import pinned_url, started_gateway
from spanrl.prompts.store import add_version, latest_version, text_sha256
from tests.helpers.fake_apis import FakeApis
from tests.rollout.lake import ingest, query_spans

ORIGINAL = "You are a calculator."


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    data = tmp_path_factory.mktemp("gw-prompts") / "data"
    data.mkdir()
    add_version(data, "calc", "OPTIMIZED calc prompt", {"method": "apo", "original_sha256": text_sha256(ORIGINAL)},
                promote=True)
    staged = add_version(data, "calc", "STAGED calc prompt", {"method": "apo", "original_sha256": text_sha256(ORIGINAL)})
    add_version(data, "solver", "OPTIMIZED solver prompt", {"method": "original"}, promote=True)
    with FakeApis() as upstream:
        with started_gateway(data, upstream.url, data.parent / "gateway.log") as root:
            def chat(model="policy", system=ORIGINAL, base=root + "/v1", headers=None):
                client = openai.OpenAI(base_url=base, api_key="x", max_retries=0, default_headers=headers or {})
                return client.chat.completions.create(model=model, messages=[
                    {"role": "system", "content": system}, {"role": "user", "content": "2+2?"}])

            chat()                                                   # by the original prompt's hash
            chat(headers={"x-spanrl-agent": "solver"})               # by the header
            chat(model="calc", system="Something else entirely.")    # by the model name
            chat(system="An agent nobody optimized.")                # no match: as sent
            chat(base=pinned_url(root, "calc", staged.version))      # a pinned, staged version
            with pytest.raises(openai.BadRequestError, match="0099"):
                chat(base=pinned_url(root, "calc", "0099"))
            openai.OpenAI(base_url=root + "/v1", api_key="x", max_retries=0).responses.create(
                model="policy", instructions=ORIGINAL, input="2+2?")
            anthropic.Anthropic(base_url=root, api_key="x", max_retries=0).messages.create(
                model="policy", system=ORIGINAL, max_tokens=16, messages=[{"role": "user", "content": "2+2?"}])
        sent = [body["messages"][0]["content"] for body, _ in upstream.exchanges]
        calls = {api: [body for body, _ in upstream.calls[api]] for api in ("responses", "messages")}
    ingest(data, "--missing-reward", "zero")
    return {"data": data, "sent": sent, "calls": calls, "staged": staged.version}


def test_the_upstream_receives_the_stored_prompts(run) -> None:
    assert run["sent"] == ["OPTIMIZED calc prompt", "OPTIMIZED solver prompt", "OPTIMIZED calc prompt",
                           "An agent nobody optimized.", "STAGED calc prompt"]  # the 0099 call never went upstream
    assert run["calls"]["responses"][0]["instructions"] == "OPTIMIZED calc prompt"
    assert run["calls"]["messages"][0]["system"] == "OPTIMIZED calc prompt"
    assert latest_version(run["data"], "calc") == "0001"  # the pinned URL did not move LATEST


def test_spans_and_lake_have_the_prompt_version(run) -> None:
    rows = query_spans(run["data"], "SELECT attributes->>'spanrl.prompt.version' AS v, attributes->>'spanrl.prompt.agent' AS a, "
                                    "attributes->>'spanrl.prompt.source' AS s, attributes->>'spanrl.prompt.original_sha256' AS h, "
                                    "attributes->>'gen_ai.input.messages' AS m FROM spans WHERE scope_name = 'spanrl.gateway' "
                                    "AND status_code <> 'ERROR' ORDER BY start_ns")
    assert [(r["a"], r["v"], r["s"]) for r in rows] == [
        ("calc", "0001", "latest"), ("solver", "0001", "latest"), ("calc", "0001", "latest"), (None, None, None),
        ("calc", run["staged"], "url"), ("calc", "0001", "latest"), ("calc", "0001", "latest")]
    assert rows[0]["h"] == text_sha256(ORIGINAL) and rows[3]["h"] == text_sha256("An agent nobody optimized.")
    assert "OPTIMIZED calc prompt" in json.loads(rows[0]["m"])[0]["parts"][0]["content"]  # the span: what the model saw
    calls = query_spans(run["data"], "SELECT prompt_version, count(*) AS n FROM llm_calls GROUP BY 1 ORDER BY 1")
    assert calls == [{"prompt_version": "calc@0001", "n": 4}, {"prompt_version": "calc@0002", "n": 1},
                     {"prompt_version": "solver@0001", "n": 1}, {"prompt_version": None, "n": 1}]


def test_rollouts_group_by_prompt_version(run) -> None:
    from click.testing import CliRunner

    from spanrl.cli import cli

    out = CliRunner().invoke(cli, ["sql", "--data", str(run["data"]), "--format", "json",
                                   "select prompt_version, count(*) AS n from rollouts group by 1 order by 1"])
    assert out.exit_code == 0, out.output
    assert [json.loads(line) for line in out.output.splitlines() if line.strip()] == [
        {"prompt_version": "calc@0001", "n": 4}, {"prompt_version": "calc@0002", "n": 1},
        {"prompt_version": "solver@0001", "n": 1}, {"prompt_version": None, "n": 1}]
