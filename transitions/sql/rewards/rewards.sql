-- name: rewards
-- Every reward of every rollout (docs/lake.md): explicit (span | event | attribute), delayed feedback,
-- and AIR rule hits. Columns: trace_id, span_id, rollout_id, name, value, source, ts_ns,
-- target_span_id, plus is_primary (the rollout's designated primary reward).
-- Feedback whose key matches no rollout appears with rollout_id NULL. An explicit reward field whose
-- value is not a finite number (NaN, ±Inf, unparseable text) appears as source `rejected` with value
-- NULL: counted in the build summary (rewards by source), never a final reward.
-- reads: _explicit_rewards, _feedback_rewards, _air_hits
-- creates: rewards
SELECT trace_id, span_id, rollout_id, name, value,
       CASE WHEN value IS NULL THEN 'rejected' ELSE source END AS source,
       ts_ns, target_span_id, is_primary
FROM _explicit_rewards
UNION ALL
SELECT trace_id, span_id, rollout_id, name, value, source, ts_ns, target_span_id, is_primary
FROM _feedback_rewards
UNION ALL
SELECT trace_id, span_id, rollout_id, name, value, source, ts_ns, target_span_id, is_primary
FROM _air_hits
