-- name: filter_choices
-- The values the Rollouts filter offers: tasks and agents, most frequent first (capped for the page).
SELECT 'task' AS kind, task_id AS value, count(*) AS n FROM _ui_rollouts WHERE task_id IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'agent', agent, count(*) FROM (SELECT unnest(agent_names) AS agent FROM _ui_rollouts) GROUP BY ALL
ORDER BY kind, n DESC, value
LIMIT 2000
