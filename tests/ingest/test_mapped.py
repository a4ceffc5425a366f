"""[[conventions]] mappings in spanrl.toml: bad entries are refused with the file and the entry, and
a mapped convention feeds the snapshot like a built-in one (expected rows of its llm_calls rows:
tests/data/views/llm_calls/toml_mapping.test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spanrl.errors import InputError
from spanrl.ingest.mapped import load_mapped_conventions
from spanrl.ingest.views import LLM_CONVENTIONS
from spanrl.transitions import read_snapshot
from tests.ingest.conftest import ingest
from tests.ingest.otlp_lines import new_span_id, new_trace_id, span, trace_line, write_lines


@pytest.mark.parametrize(("toml", "message"), [
    ('[[conventions]]\nname = "Bad-Name"\nprompt = "p"\n', "lower_snake_case"),
    ('[[conventions]]\nname = "openinference"\nprompt = "p"\n', "must be new"),
    ('[[conventions]]\nname = "acme"\nmodel = "m"\n', "map at least prompt or response"),
    ('[[conventions]]\nname = "acme"\nprompt = "p"\ncolour = "red"\n', "unknown keys ['colour']"),
    ('[[conventions]]\nname = "acme"\nprompt = { attribute = "p", path = "messages" }\n', "must be a JSON path"),
    ('[[conventions]]\nname = "acme"\nprompt = 3\n', "give an attribute name"),
])
def test_bad_mappings_name_the_file_and_entry(tmp_path: Path, toml: str, message: str) -> None:
    cfg = tmp_path / "spanrl.toml"
    cfg.write_text(toml)
    with pytest.raises(InputError, match="conventions") as err:
        load_mapped_conventions(cfg, LLM_CONVENTIONS)
    assert str(cfg) in str(err.value) and "#1" in str(err.value) and message in str(err.value)


def test_a_mapped_convention_becomes_transitions_with_its_token_ids(tmp_path: Path) -> None:
    (tmp_path / "spanrl.toml").write_text('[[conventions]]\nname = "acme"\nprompt = "acme.prompt"\n'
                                          'response = "acme.answer"\nprompt_token_ids = "acme.prompt_ids"\n'
                                          'response_token_ids = "acme.answer_ids"\n')
    tid, root = new_trace_id(), new_span_id()
    write_lines(tmp_path / "otel" / "traces.jsonl", [trace_line([
        span("run", tid, root, attrs={"spanrl.rollout_id": "r1", "spanrl.reward": 1.0}),
        span("acme call", tid, new_span_id(), parent=root, start=10 ** 18 * 2, attrs={
            "acme.prompt": json.dumps([{"role": "user", "content": "hi"}]), "acme.answer": "hello",
            "acme.prompt_ids": [1, 2], "acme.answer_ids": [3]})])])
    ingest(tmp_path)
    out = subprocess.run([sys.executable, "-m", "spanrl", "transitions", "build", "--data", str(tmp_path), "--settle", "0s"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (row,) = read_snapshot(tmp_path)[0].to_pylist()
    assert json.loads(row["response_message"]) == {"role": "assistant", "content": "hello"}
    assert (row["prompt_token_ids"], row["response_token_ids"], row["token_source"]) == ([1, 2], [3], "engine")
