-- name: _trace_rollouts
-- The rollout a trace id stands for (feedback keyed by trace_id; logs without a span): the rollout
-- of the trace's root spans, else of its earliest span.
-- reads: _span_tree
-- creates: _trace_rollouts
SELECT trace_id, arg_min(rollout_id, (NOT is_root, start_ns, span_id)) AS rollout_id
FROM _span_tree
GROUP BY trace_id
