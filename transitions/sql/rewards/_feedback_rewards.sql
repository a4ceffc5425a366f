-- name: _feedback_rewards
-- Delayed feedback rows (table _feedback, loaded from DATA/feedback/ by feedback.py) resolved to a
-- rollout by rollout_id, trace_id or response_id (gen_ai.response.id of an LLM call). Rows whose key
-- matches nothing keep rollout_id NULL: they are reported, never silently dropped.
WITH known_rollouts AS (SELECT DISTINCT rollout_id FROM _span_tree),
responses AS (
    SELECT response_id, min(trace_id) AS trace_id, min(span_id) AS span_id, min(rollout_id) AS rollout_id
    FROM _rollout_calls WHERE response_id IS NOT NULL GROUP BY response_id
)
SELECT coalesce(f.trace_id, rc.trace_id) AS trace_id,
       rc.span_id AS span_id,
       coalesce(kr.rollout_id, tr.rollout_id, rc.rollout_id) AS rollout_id,
       coalesce(f.name, 'feedback') AS name,
       f.value,
       'feedback' AS source,
       f.ts_ns,
       rc.span_id AS target_span_id,
       coalesce(f.name, '') = 'primary' AS is_primary,
       f.file, f.line,
       coalesce('rollout_id=' || f.rollout_id, 'trace_id=' || f.trace_id, 'response_id=' || f.response_id) AS feedback_key
FROM _feedback f
LEFT JOIN known_rollouts kr ON kr.rollout_id = f.rollout_id
LEFT JOIN _trace_rollouts tr ON tr.trace_id = f.trace_id
LEFT JOIN responses rc ON rc.response_id = f.response_id
