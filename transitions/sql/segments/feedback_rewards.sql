-- name: feedback_rewards
-- The build's feedback rewards over the whole lake (a global file of the build, not of a segment), in file order.
SELECT trace_id, span_id, rollout_id, name, value, source, ts_ns, target_span_id, is_primary
FROM _feedback_rewards ORDER BY file, line
