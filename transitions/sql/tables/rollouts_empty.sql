-- name: rollouts_empty
-- rollouts when no segment holds any: the columns the summary and the snapshot read, no rows.
CREATE TABLE rollouts AS
SELECT NULL::VARCHAR AS rollout_id, NULL::BOOLEAN AS complete, NULL::DOUBLE AS final_reward,
       NULL::BIGINT AS started_ns, NULL::BIGINT AS ended_ns
WHERE false
