"""The pure pieces of ``spanrl serve``: tool-call parsing, message normalisation, nucleus sampling, chunking."""

from __future__ import annotations

import json
import threading

import torch

from spanrl.serve.batching import Job, _chunks
from spanrl.serve.engine import SamplingParams, Sequence, _nucleus
from spanrl.serve.tools import normalise_messages, parse_tool_calls, template_handles_tools

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


def test_parse_one_and_several_tool_calls() -> None:
    reply = parse_tool_calls('Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>')
    assert reply.content == "Sure."
    (call,) = reply.tool_calls
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "add" and json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}
    two = parse_tool_calls('<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
                           '<tool_call>{"name": "b", "parameters": {"x": "é"}}</tool_call>')
    assert two.content is None and [c["function"]["name"] for c in two.tool_calls] == ["a", "b"]
    assert json.loads(two.tool_calls[1]["function"]["arguments"]) == {"x": "é"}
    assert two.tool_calls[0]["id"] != two.tool_calls[1]["id"]


def test_unclosed_last_block_and_string_arguments() -> None:
    reply = parse_tool_calls('<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 1}"}')
    assert reply.tool_calls[0]["function"]["arguments"] == '{"a": 1}' and reply.content is None


def test_malformed_tool_calls_stay_plain_text() -> None:
    for text in ['<tool_call>{"name": "add", "arguments": {</tool_call>',  # bad JSON
                 '<tool_call>["add"]</tool_call>',  # not an object
                 '<tool_call>{"arguments": {}}</tool_call>',  # no name
                 '<tool_call>{"name": "ok", "arguments": {}}</tool_call><tool_call>oops</tool_call>']:
        reply = parse_tool_calls(text)
        assert reply.tool_calls == [] and reply.content == text  # nothing lost
    assert parse_tool_calls("just text").content == "just text"


def test_messages_for_a_template_with_tools() -> None:
    msgs = [{"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "user", "content": "add 1 and 2"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "3"}]
    out = normalise_messages(msgs, TOOLS, template_tools=True)
    assert out[0] == {"role": "system", "content": "be brief"}
    assert out[2]["content"] == "" and out[2]["tool_calls"][0]["function"]["arguments"] == {"a": 1, "b": 2}
    assert out[3] == {"role": "tool", "content": "3", "tool_call_id": "c1"}


def test_messages_for_a_template_without_tools_get_the_hermes_block() -> None:
    msgs = [{"role": "user", "content": "add 1 and 2"},
            {"role": "assistant", "content": "ok", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "3"}]
    out = normalise_messages(msgs, TOOLS, template_tools=False)
    assert out[0]["role"] == "system" and "<tools>" in out[0]["content"] and '"name": "add"' in out[0]["content"]
    assert out[2]["content"] == 'ok\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>'
    assert "tool_calls" not in out[2]
    assert out[3]["content"] == "<tool_response>\n3\n</tool_response>"
    assert normalise_messages(msgs[:1], None, template_tools=False) == msgs[:1]  # no tools: untouched
    assert template_handles_tools("{% if tools %}x{% endif %}") and not template_handles_tools("{{ messages }}")


def test_nucleus_keeps_the_smallest_set_reaching_top_p() -> None:
    logp = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.5, 0.3, 0.15, 0.05]]))
    out = _nucleus(logp, torch.tensor([0.7, 0.7]), torch.tensor([False, True]))
    assert torch.allclose(out[0].exp(), torch.tensor([0.625, 0.375, 0.0, 0.0]))  # 0.5 + 0.3 >= 0.7
    assert torch.allclose(out[1].exp(), logp[1].exp())  # greedy rows are never truncated


def test_chunks_respect_max_rows() -> None:
    def job(n: int) -> Job:
        return Job([Sequence([1], SamplingParams()) for _ in range(n)])

    jobs = [job(3), job(3), job(1), job(9), job(2)]
    sizes = [[len(j.seqs) for j in chunk] for chunk in _chunks(jobs, 8)]
    assert sizes == [[3, 3, 1], [9], [2]]


class _StubEngine:
    """Stands in for the model: fills each row with its prompt reversed, or raises on demand."""

    def __init__(self) -> None:
        self.loaded: dict[str, str] = {}
        self.fail_next = False

    def generate(self, seqs: list[Sequence], adapter_id: str | None, admit=None, on_finish=None) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("out of memory")
        for s in seqs:
            s.output_ids, s.finish_reason = s.prompt_ids[::-1], "stop"
            on_finish(s)


def test_batcher_skips_cancelled_jobs_and_survives_engine_errors() -> None:
    from spanrl.serve.batching import AdapterWatcher, Batcher, Control

    engine = _StubEngine()
    batcher = Batcher(engine, AdapterWatcher(engine), max_batch=4, batch_wait=0.0, idle_poll=0.05)  # type: ignore[arg-type]
    batcher.start()
    try:
        gate = threading.Event()
        blocker = batcher.submit(Control(gate.wait))  # occupies the model thread
        gone, kept = Job([Sequence([1, 2], SamplingParams())]), Job([Sequence([3, 4], SamplingParams())])
        batcher.submit(gone)
        batcher.submit(kept)
        assert gone.future.cancel()  # the client disconnected while queued
        gate.set()
        blocker.result(timeout=10)
        assert kept.future.result(timeout=10).seqs[0].output_ids == [4, 3]
        assert batcher.rows == 1  # the cancelled job cost nothing
        engine.fail_next = True
        failed = batcher.submit(Job([Sequence([5], SamplingParams())]))
        assert isinstance(failed.exception(timeout=10), RuntimeError)
        after = batcher.submit(Job([Sequence([6, 7], SamplingParams())]))
        assert after.result(timeout=10).seqs[0].output_ids == [7, 6] and batcher.failed == 1
    finally:
        batcher.stop()


class _SteppingEngine(_StubEngine):
    """Decodes in 3 'steps', asking ``admit`` for more rows between them; pauses after step 1."""

    def __init__(self) -> None:
        super().__init__()
        self.paused, self.resume = threading.Event(), threading.Event()
        self.calls: list[list[list[int]]] = []

    def generate(self, seqs: list[Sequence], adapter_id: str | None, admit=None, on_finish=None) -> None:
        rows, seen = list(seqs), []
        for step in range(3):
            if step == 1 and not self.paused.is_set():
                self.paused.set()
                self.resume.wait(10)
            rows += admit(len(rows)) if admit else []
        for s in rows:
            s.output_ids, s.finish_reason = [adapter_id is not None], "stop"
            seen.append(s.prompt_ids)
            on_finish(s)
        self.calls.append(seen)


def test_continuous_batching_admits_waiting_jobs_in_order() -> None:
    from spanrl.serve.batching import AdapterWatcher, Batcher, Control

    engine = _SteppingEngine()
    engine.loaded["lora"] = "a_lora"
    batcher = Batcher(engine, AdapterWatcher(engine), max_batch=4, batch_wait=0.0, idle_poll=0.05,  # type: ignore[arg-type]
                      continuous=True)
    batcher.start()
    try:
        first = batcher.submit(Job([Sequence([1], SamplingParams())]))
        assert engine.paused.wait(10)
        joins = batcher.submit(Job([Sequence([2], SamplingParams()), Sequence([3], SamplingParams())]))
        other = batcher.submit(Job([Sequence([4], SamplingParams())], adapter="lora"))  # another adapter: waits
        late = batcher.submit(Job([Sequence([5], SamplingParams())]))  # behind it: order is kept
        ran = batcher.submit(Control(lambda: "control ran"))
        engine.resume.set()
        for fut in (first, joins, other, late):
            fut.result(timeout=10)
        assert ran.result(timeout=10) == "control ran"
        assert engine.calls[0] == [[1], [2], [3]]  # the waiting job joined the running batch
        assert [1] in engine.calls[0] and [4] not in engine.calls[0] and [5] not in engine.calls[0]
        assert other.result().adapter_used == "lora" and joins.result().adapter_used is None
        stats = batcher.stats()
        assert stats["admitted_rows"] == 2 and stats["rows_generated"] == 5
    finally:
        batcher.stop()
