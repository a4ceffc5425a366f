-- name: _p_responses_empty
-- _p_responses when no earlier build stored any (the columns of _p_responses.sql).
-- reads:
-- creates: _p_responses
SELECT NULL::VARCHAR AS response_id, NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id, NULL::VARCHAR AS rollout_id
WHERE false
