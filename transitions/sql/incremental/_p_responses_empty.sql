-- name: _p_responses_empty
-- _p_responses when no earlier build stored any (the columns of _p_responses.sql).
CREATE OR REPLACE TEMP TABLE _p_responses (response_id VARCHAR, trace_id VARCHAR, span_id VARCHAR, rollout_id VARCHAR)
