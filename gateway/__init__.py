"""``spanrl gateway``: an OpenAI-compatible proxy that records every LLM call with engine token ids."""
