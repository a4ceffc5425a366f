-- name: rollouts_page($agent, $air, $errors, $in_search, $limit, $offset, $reward_max, $reward_min, $since_ns, $snapshot_bit, $task, $until_ns)
-- One page of the Rollouts table under the current filter, with the filter's row count and reward
-- mean (and the lake's rollout count, lake_total) on every row (a single row of NULL rollout columns when the page is past the end). Reads the
-- narrow per-rollout rows the server holds (_ui_rollouts, held_summary.sql: AIR hits included). NULL
-- parameters mean "no filter"; $snapshot_bit is the snapshot's bit in the held ``snapshots`` column
-- (ui/data.py snapshot_bit), $in_search switches on the /*search*/ table (the rollouts a text search
-- matched). The ORDER BY slot is filled from a fixed list of sort keys (ui/filters.py SORTS).
WITH picked AS (
    SELECT r.rollout_id, r.task_id, r.agent_names, r.n_llm_calls, r.n_tool_calls, r.n_errors, r.final_reward,
           r.started_ns, r.ended_ns, r.complete, r.air_hits
    FROM _ui_rollouts r
    WHERE ($task IS NULL OR r.task_id = $task)
      AND ($agent IS NULL OR list_contains(r.agent_names, $agent))
      AND ($reward_min IS NULL OR r.final_reward >= $reward_min)
      AND ($reward_max IS NULL OR r.final_reward <= $reward_max)
      AND ($air IS NULL OR (r.air_hits > 0) = $air)
      AND ($errors IS NULL OR (r.n_errors > 0) = $errors)
      AND ($since_ns IS NULL OR r.started_ns >= $since_ns)
      AND ($until_ns IS NULL OR r.started_ns < $until_ns)
      AND ($snapshot_bit IS NULL OR r.snapshots & $snapshot_bit <> 0)
      AND (NOT $in_search OR r.rollout_id IN (SELECT rollout_id FROM /*search*/))
),
stats AS (
    SELECT count(*) AS total, avg(final_reward) AS reward_mean, count(final_reward) AS with_reward,
           (SELECT count(*) FROM _ui_rollouts) AS lake_total
    FROM picked
),
page AS (
    SELECT * FROM picked ORDER BY /*order*/, rollout_id LIMIT $limit OFFSET $offset
)
SELECT page.*, stats.* FROM stats LEFT JOIN page ON true
ORDER BY /*order*/, rollout_id
