"""Shared fakes for tests (like OTel's consumertest): fake OpenAI server, tiny models, agents."""
