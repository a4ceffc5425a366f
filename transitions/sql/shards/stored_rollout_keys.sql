-- name: stored_rollout_keys
-- An incremental night's keys besides _trace_keys.sql's: the stored rollout of each touched trace (the
-- last build's _p_rollouts), so the traces of one stored rollout share a shard even where no span key ties them.
SELECT trace_id, 's:' || rollout_id AS key
FROM (SELECT rollout_id, unnest(trace_ids) AS trace_id FROM _p_rollouts) SEMI JOIN _touched USING (trace_id)
