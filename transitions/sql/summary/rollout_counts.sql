-- name: rollout_counts
-- The build's rollouts: seen, complete, still waiting, and complete without a reward.
SELECT count(*) AS rollouts_seen, count(*) FILTER (WHERE complete) AS rollouts_complete,
       count(*) FILTER (WHERE NOT complete) AS rollouts_waiting,
       count(*) FILTER (WHERE complete AND final_reward IS NULL) AS rollouts_without_reward
FROM rollouts
