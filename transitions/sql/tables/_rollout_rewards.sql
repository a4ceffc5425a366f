-- name: _rollout_rewards
-- Each rollout's task and reward, from the stored digests (what the snapshot's credit step reads).
CREATE VIEW _rollout_rewards AS SELECT rollout_id, task_id, r FROM _digests
