-- name: _rollout_rewards
-- Per rollout of the snapshot: task, reward r and its AIR total s over n calls (credit `air`'s group statistics).
-- reads: _digests, _rollout_air
-- creates: _rollout_rewards
SELECT d.rollout_id, d.task_id, d.r, a.s, a.n FROM _digests d LEFT JOIN _rollout_air a USING (rollout_id)
