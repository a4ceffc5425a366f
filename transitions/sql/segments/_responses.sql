-- name: _responses
-- A segment's response ids and where they sit: what a later incremental build resolves feedback against.
SELECT DISTINCT response_id, trace_id, span_id, rollout_id FROM _rollout_calls
WHERE response_id IS NOT NULL
