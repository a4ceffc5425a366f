-- name: snapshot_rollout_stats($hi, $lo)
-- Per rollout of one page of a snapshot ($lo..$hi, the page's first and last rollout id): AIR step
-- rewards, advantage range, engine-token calls. The rows are stored in rollout order and the bounds
-- are constants, so the scan reads the row groups of the page only.
SELECT rollout_id,
       count(*) FILTER (WHERE step_reward <> 0) AS air_steps, sum(step_reward) AS step_reward_sum,
       min(advantage) AS adv_min, max(advantage) AS adv_max,
       count(*) FILTER (WHERE token_source = 'engine') AS engine_calls
FROM _ui_snapshot
WHERE rollout_id BETWEEN $lo AND $hi
GROUP BY rollout_id
