"""A tiny agent with a hard-coded system prompt: ``calc_agent.py MODEL SYSTEM_PROMPT``, the task on stdin,
one chat completion through OPENAI_BASE_URL (the plain openai SDK, no telemetry), its answer printed. Like
many agents (and examples/calc_agent), it keeps a worked example in its conversation, before the task."""

import sys

import openai

model, system = sys.argv[1], sys.argv[2]
answer = openai.OpenAI(max_retries=0).chat.completions.create(
    model=model, messages=[{"role": "system", "content": system}, {"role": "user", "content": "What is 100+200?"},
                           {"role": "assistant", "content": "300"}, {"role": "user", "content": sys.stdin.read().strip()}])
print(answer.choices[0].message.content)
