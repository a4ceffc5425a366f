"""``spanrl prompts``: versioned system prompts per agent, applied by ``spanrl gateway --prompts``, and
optimized from the lake's rewarded rollouts (docs/prompts.md)."""
