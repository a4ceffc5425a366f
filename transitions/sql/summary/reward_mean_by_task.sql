-- name: reward_mean_by_task
-- The five tasks with most rollouts in the snapshot, with their mean final reward.
SELECT task_id, count(*) AS rollouts, avg(r) AS mean FROM _digests GROUP BY task_id
ORDER BY count(*) DESC, task_id LIMIT 5
