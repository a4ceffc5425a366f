-- name: shard_conflicts($rollouts, $responses)
-- What a sharded build must not have: a rollout, or an LLM call's response id, in two shards (the
-- shards' rollouts.parquet and _responses.parquet). Any: the build is redone in one process.
SELECT (SELECT count(*) FROM (SELECT rollout_id FROM read_parquet($rollouts::VARCHAR[], filename = true)
                              GROUP BY rollout_id HAVING count(DISTINCT filename) > 1)) AS rollouts,
       (SELECT count(*) FROM (SELECT response_id FROM read_parquet($responses::VARCHAR[], filename = true)
                              GROUP BY response_id HAVING count(DISTINCT filename) > 1)) AS responses
