-- name: rollouts_page
-- One page of the Rollouts table under the current filter, with the filter's row count and reward
-- mean on every row (one pass over rollouts). NULL parameters mean "no filter"; $in_snapshot /
-- $in_search switch on the registered _ui_snapshot / _ui_search relations. The ORDER BY slot is
-- filled from a fixed list of sort keys (ui/filters.py SORTS).
WITH air AS (
    SELECT rollout_id, count(*) AS air_hits FROM rewards WHERE source = 'air' GROUP BY rollout_id
),
picked AS (
    SELECT r.rollout_id, r.task_id, r.agent_names, r.n_llm_calls, r.n_tool_calls, r.n_errors, r.final_reward,
           r.started_ns, r.ended_ns, r.complete, coalesce(a.air_hits, 0) AS air_hits
    FROM rollouts r LEFT JOIN air a USING (rollout_id)
    WHERE ($task IS NULL OR r.task_id = $task)
      AND ($agent IS NULL OR list_contains(r.agent_names, $agent))
      AND ($reward_min IS NULL OR r.final_reward >= $reward_min)
      AND ($reward_max IS NULL OR r.final_reward <= $reward_max)
      AND ($air IS NULL OR (coalesce(a.air_hits, 0) > 0) = $air)
      AND ($since_ns IS NULL OR r.started_ns >= $since_ns)
      AND ($until_ns IS NULL OR r.started_ns < $until_ns)
      AND (NOT $in_snapshot OR r.rollout_id IN (SELECT rollout_id FROM _ui_snapshot))
      AND (NOT $in_search OR list_has_any(r.trace_ids, (SELECT list(trace_id) FROM _ui_search)))
)
SELECT *, count(*) OVER () AS total, avg(final_reward) OVER () AS reward_mean,
       count(final_reward) OVER () AS with_reward
FROM picked
ORDER BY /*order*/, rollout_id
LIMIT $limit OFFSET $offset
