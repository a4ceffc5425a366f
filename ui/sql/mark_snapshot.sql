-- name: mark_snapshot($bit)
-- Set bit $bit of the held rollouts' ``snapshots`` column on every rollout of the registered
-- snapshot parts (_ui_marking; ui/data.py snapshot_bit; /*held*/ is the held table's name).
UPDATE /*held*/ SET snapshots = snapshots | $bit::UTINYINT
WHERE rollout_id IN (SELECT DISTINCT rollout_id FROM _ui_marking)
