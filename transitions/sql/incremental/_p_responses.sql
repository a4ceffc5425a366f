-- name: _p_responses(${files})
-- The last build's LLM-call response ids over its segments (_responses.parquet), with their trace, span and rollout.
-- reads:
-- creates: _p_responses
SELECT response_id, trace_id, span_id, rollout_id FROM read_parquet(${files})
