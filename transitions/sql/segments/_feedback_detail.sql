-- name: _feedback_detail
-- Per feedback row, its file, line and the rollout it resolved to (NULL: unknown key, for the summary).
SELECT file, line, rollout_id, feedback_key FROM _feedback_rewards ORDER BY file, line
