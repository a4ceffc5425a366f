"""Serving: an OpenAI-compatible chat server over a base model and the latest adapter (``spanrl serve``)."""
