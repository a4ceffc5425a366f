"""Candidate prompts: (b) demonstrations from the best rollouts of other tasks, appended to the prompt or
given as conversation turns (no model needed); (a) APO / ProTeGi-style textual gradients from an optimizer model (any
OpenAI-compatible endpoint): a critique of the prompt from failed and successful rollouts, then
rewrites that apply it (docs/prompts.md, "Method")."""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Any

from spanrl.errors import InputError
from spanrl.prompts.lake import Example

DEMO_HEADER = "\n\nWorked examples of solved tasks:\n"
CRITIC = "You improve the system prompts of AI agents from evidence: rollouts of the agent and their rewards."
CRITIQUE = ("The agent's system prompt is:\n<prompt>\n{prompt}\n</prompt>\n\nRollouts of the agent with this prompt "
            "(higher reward is better):\n\n{examples}\n\nWhy does this prompt lead to the low-reward rollouts? Give "
            "the reasons as a short list. Do not rewrite the prompt yet.")
REWRITE = ("The agent's system prompt is:\n<prompt>\n{prompt}\n</prompt>\n\nA critique of it, from rollouts and their "
           "rewards:\n{critique}\n\nWrite an improved system prompt that fixes these problems and keeps what works. "
           "Answer with the new prompt only, between <prompt> and </prompt>.")


def _eligible(examples: list[Example], exclude_inputs: set[str]) -> list[Example]:
    """Rollouts that may be shown: reward above 0 and in the upper half of the agent's reward range (a
    partial credit, like the calculator agent's 0.2 for a tool call that ran with the wrong numbers, is a
    failure to imitate, not an example), an answer, a task not being scored (no answer of a scored task
    leaks into its prompt), one per task; highest reward first and, at equal reward, those that took steps
    (tool calls) first: a worked example shows how, and a lucky answer without the agent's tools teaches
    skipping them (found on the demo's calculator agent: "Final answer: If 4 bags contain ...")."""
    rewards = [e.reward for e in examples]
    floor = max(0.0, (max(rewards) + min(rewards)) / 2) if rewards else 0.0
    seen, out = set(), []
    for e in sorted(examples, key=lambda e: (-e.reward, not e.steps, e.rollout_id)):
        if e.reward <= 0 or (e.reward < floor) or not e.answer or e.input.strip() in exclude_inputs \
                or e.task_id in exclude_inputs or e.input in seen:  # a failure is no example to follow
            continue
        seen.add(e.input)
        out.append(e)
    return out


def with_demos(prompt: str, picked: list[Example]) -> str:
    body = "\n\n".join(f"Example {i}:\n{e.render(with_reward=False)}" for i, e in enumerate(picked, 1))
    return prompt.rstrip() + DEMO_HEADER + body


_TOKEN = re.compile(r"[^\W\d]+|#|[^\w\s]")


def _features(e: Example) -> frozenset[str]:
    """What kind of task an example is and what the agent did for it: the words and symbols of the task and
    its tool calls, every number masked (two tasks of one kind differ in their numbers, not their shape)."""
    text = re.sub(r"\d+(?:\.\d+)?", "#", f"{e.input} {' '.join(e.steps)}".lower())
    return frozenset(_TOKEN.findall(text))


def _distance(a: frozenset[str], b: frozenset[str]) -> float:
    return 1.0 - len(a & b) / len(a | b) if a | b else 0.0


def _cover(ranked: list[Example], k: int, start: Example) -> list[Example]:
    """``k`` examples from ``ranked`` (best first) that cover its kinds of task: from ``start``, each next one
    the farthest from those already picked (Gonzalez's k-center), among the best tier left (same reward,
    steps or not) so that coverage never trades a success for a lesser rollout; ties go to rank order."""
    feats = {e.rollout_id: _features(e) for e in ranked}
    picked, rest = [start], [e for e in ranked if e is not start]
    while rest and len(picked) < k:
        best = max((e.reward, bool(e.steps)) for e in rest)
        tier = [e for e in rest if (e.reward, bool(e.steps)) == best]
        far = max(tier, key=lambda e: min(_distance(feats[e.rollout_id], feats[p.rollout_id]) for p in picked))
        picked.append(far)
        rest.remove(far)
    return picked


def demo_sets(examples: list[Example], exclude_inputs: set[str], k: int, sets: int = 1,
              seed: int = 0) -> list[list[Example]]:
    """Up to ``sets`` sets of ``k`` worked examples (DSPy's bootstrapped few-shot with random search, the
    examples chosen for coverage): the first starts from the highest-reward rollout and adds, each time,
    the one least like those picked (another kind of task, another use of the tools); the others do the
    same from a seeded random start among the best ones (those at the top reward that took steps, all at
    the top reward when fewer than ``k`` did, or the top ``2k`` when fewer reach it), so which set helps
    is found by scoring, not guessed. Drawn at random instead, the demo's calculator agent got sets of
    the task kinds it already solves and none of those it fails (docs/prompts.md). Empty when no
    rollout qualifies."""
    pool = _eligible(examples, exclude_inputs)
    if not pool:
        return []
    top = [e for e in pool if e.reward == pool[0].reward]
    stepped = [e for e in top if e.steps]
    top = stepped if len(stepped) >= k else top
    best = top if len(top) > k else pool[:2 * k]
    rng = random.Random(seed)
    out = [_cover(best if len(best) >= k else pool, k, best[0])]
    drawn = {frozenset(e.rollout_id for e in out[0])}
    for _ in range(20 * sets):  # a small pool has fewer distinct sets than asked for
        if len(out) >= sets or len(best) <= k:
            break
        order = rng.sample(best, len(best))  # a random start, and random order among equally far ones
        picked = _cover(order, k, order[0])
        key = frozenset(e.rollout_id for e in picked)
        if key not in drawn:
            drawn.add(key)
            out.append(picked)
    return out


def as_turns(picked: list[Example]) -> list[dict[str, Any]]:
    """A set's worked examples as conversation turns (gateway/turns.py puts them after the system message):
    each rollout's own task, tool calls, results and answer, as the model produced them; a rollout the
    lake cannot give as turns is left out."""
    return [dict(m) for e in picked for m in e.turns]


def for_critique(examples: list[Example], failures: int = 4, successes: int = 2) -> list[Example]:
    """The lowest-reward rollouts and a few of the highest (the contrast is the signal), lowest first."""
    ordered = sorted(examples, key=lambda e: (e.reward, e.rollout_id))
    low = ordered[:failures]
    high = [e for e in reversed(ordered) if e not in low][:successes]
    return low + high


@dataclass
class Optimizer:
    """An OpenAI-compatible chat endpoint that critiques and rewrites prompts (API key: ``OPENAI_API_KEY``)."""

    url: str
    model: str
    timeout_s: float = 120.0
    temperature: float = 0.7

    def chat(self, system: str, user: str) -> str:
        import httpx

        key = os.environ.get("OPENAI_API_KEY", "unused")
        try:
            resp = httpx.post(self.url.rstrip("/") + "/chat/completions", timeout=self.timeout_s,
                              headers={"Authorization": f"Bearer {key}"},
                              json={"model": self.model, "temperature": self.temperature,
                                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
            resp.raise_for_status()
            return str(resp.json()["choices"][0]["message"]["content"] or "")
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            raise InputError(f"--optimizer-url {self.url} (model {self.model}) failed: {exc}; check the URL ends in "
                             "/v1 and serves that model") from None

    def critique(self, prompt: str, examples: list[Example]) -> str:
        shown = "\n\n".join(f"Rollout {i}:\n{e.render()}" for i, e in enumerate(examples, 1))
        return self.chat(CRITIC, CRITIQUE.format(prompt=prompt, examples=shown or "(none recorded)")).strip()

    def rewrite(self, prompt: str, critique: str) -> str | None:
        text = self.chat(CRITIC, REWRITE.format(prompt=prompt, critique=critique))
        match = re.search(r"<prompt>(.*?)</prompt>", text, re.S)
        new = (match.group(1) if match else text).strip()
        return new or None

    def expand(self, prompt: str, examples: list[Example], k: int) -> tuple[str, list[str]]:
        """One critique of ``prompt``, then ``k`` rewrites (deduplicated, the prompt itself left out)."""
        critique = self.critique(prompt, for_critique(examples))
        out: list[str] = []
        for _ in range(k):
            new = self.rewrite(prompt, critique)
            if new and new != prompt.strip() and new not in out:
                out.append(new)
        return critique, out
