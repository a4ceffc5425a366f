-- name: snapshot_rollouts($limit, $offset)
-- A page of a snapshot's rollouts (rollout order, LIMIT/OFFSET, total) from its per-rollout index
-- (_ui_snapshot_digests, digests.parquet), never from the rows: a page costs the same at 1k or 1M
-- rollouts. snapshot_rollout_stats.sql then reads the rows of the page's rollouts only.
SELECT rollout_id, task_id, n_rows AS calls, r AS final_reward, count(*) OVER () AS total
FROM _ui_snapshot_digests
ORDER BY rollout_id
LIMIT $limit OFFSET $offset
