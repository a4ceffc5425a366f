-- name: _touched_rollouts
-- The rollouts an incremental build recomputes: those it made now and the older ones holding a recomputed trace.
-- reads: rollouts, _p_rollouts, _touched
-- creates: _touched_rollouts
SELECT rollout_id FROM rollouts
UNION SELECT rollout_id FROM (SELECT rollout_id, unnest(trace_ids) AS trace_id FROM _p_rollouts)
      SEMI JOIN _touched USING (trace_id)
