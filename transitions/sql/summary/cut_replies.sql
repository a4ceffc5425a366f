-- name: cut_replies
-- LLM calls of the lake whose reply the engine cut at its token limit (finish_reason 'length', Anthropic's
-- 'max_tokens', Gemini's 'MAX_TOKENS', the Responses API's 'max_output_tokens'; trainer/data.py CUT_REASONS):
-- half answers the agent acted on, worth a warning when the agent's or the server's max_tokens is too low.
SELECT count(*) FILTER (WHERE lower(finish_reason) IN ('length', 'max_tokens', 'max_output_tokens')) AS n
FROM llm_calls
