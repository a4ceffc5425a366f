-- name: rollout_counts
-- The build's rollouts: seen, complete, still waiting, complete without a reward, and complete evaluation
-- rollouts (spanrl eval's: purpose 'eval'), which the snapshot leaves out unless --include-eval.
SELECT count(*) AS rollouts_seen, count(*) FILTER (WHERE complete) AS rollouts_complete,
       count(*) FILTER (WHERE NOT complete) AS rollouts_waiting,
       count(*) FILTER (WHERE complete AND final_reward IS NULL) AS rollouts_without_reward,
       count(*) FILTER (WHERE complete AND purpose = 'eval') AS rollouts_eval
FROM rollouts
