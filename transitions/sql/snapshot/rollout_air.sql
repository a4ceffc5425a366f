-- name: rollout_air
-- Per rollout of transition rows (relation transition_rows): the sum of its calls' AIR rewards (s) and
-- its number of calls (n), what credit `air` puts into the group statistics (rollout_advantages.sql).
-- Summed over a list in step order, so the float result does not depend on thread scheduling.
-- reads: transition_rows
-- creates: _rollout_air
SELECT rollout_id, list_sum(list(coalesce(step_reward, 0.0) ORDER BY step)) AS s, count(*) AS n
FROM transition_rows
GROUP BY rollout_id
