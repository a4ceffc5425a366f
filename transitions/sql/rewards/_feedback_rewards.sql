-- name: _feedback_rewards
-- Delayed feedback rows (table _feedback, loaded from DATA/feedback/ by feedback.py) resolved to a
-- rollout by rollout_id, trace_id or response_id (gen_ai.response.id of an LLM call). Rows whose key
-- matches nothing keep rollout_id NULL: they are reported, never silently dropped.
-- An incremental build computes only some traces: the _prior_* relations hold the rollouts, trace
-- rollouts and LLM-call response ids of every other trace of the lake (empty in a full build and on
-- a query connection), so every feedback row resolves exactly as over the whole lake.
-- reads: _feedback, _prior_rollout_ids, _prior_trace_rollouts, _prior_responses, _span_tree, _trace_rollouts, _rollout_calls
-- creates: _feedback_rewards
-- Each lookup keeps only the keys some feedback row names (a semi join on the few feedback rows), so a
-- night without feedback builds no table over its spans (a 600k-span rebuild: 0.13 -> 0.05 CPU s,
-- bench/pieces/feedback.py; more on an incremental night, whose _prior_* hold the older nights).
WITH known_rollouts AS (
    SELECT rollout_id FROM (SELECT rollout_id FROM _span_tree UNION SELECT rollout_id FROM _prior_rollout_ids)
    SEMI JOIN _feedback USING (rollout_id)
),
trace_rollouts AS (
    SELECT trace_id, rollout_id FROM (SELECT trace_id, rollout_id FROM _trace_rollouts
                                      UNION ALL SELECT trace_id, rollout_id FROM _prior_trace_rollouts)
    SEMI JOIN _feedback USING (trace_id)
),
responses AS (
    SELECT response_id, min(trace_id) AS trace_id, min(span_id) AS span_id, min(rollout_id) AS rollout_id
    FROM (SELECT response_id, trace_id, span_id, rollout_id FROM _rollout_calls WHERE response_id IS NOT NULL
          UNION ALL SELECT response_id, trace_id, span_id, rollout_id FROM _prior_responses)
    SEMI JOIN _feedback USING (response_id)
    GROUP BY response_id
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
LEFT JOIN trace_rollouts tr ON tr.trace_id = f.trace_id
LEFT JOIN responses rc ON rc.response_id = f.response_id
