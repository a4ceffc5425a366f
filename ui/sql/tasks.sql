-- name: tasks($limit, $offset)
-- Per task (the groups the advantage baseline is computed over): rollouts and the reward spread.
SELECT task_id, count(*) AS rollouts, count(final_reward) AS rewarded,
       avg(final_reward) AS mean, stddev_samp(final_reward) AS sd, min(final_reward) AS lo,
       quantile_cont(final_reward, 0.5) AS median, max(final_reward) AS hi,
       count(*) OVER () AS total
FROM _ui_rollouts
GROUP BY task_id
ORDER BY rollouts DESC, task_id NULLS LAST
LIMIT $limit OFFSET $offset
