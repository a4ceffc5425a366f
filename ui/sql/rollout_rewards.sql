-- name: rollout_rewards($rollout_id)
-- Every reward of a rollout with its source; AIR hits name their rule and the call they credit.
SELECT name, value, source, ts_ns, span_id, target_span_id, is_primary
FROM rewards WHERE rollout_id = $rollout_id
ORDER BY source = 'air', ts_ns NULLS LAST, name
