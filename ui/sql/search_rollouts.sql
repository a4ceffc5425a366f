-- name: search_rollouts
-- The rollouts whose traces a finished text search matched (the registered _ui_search trace ids).
SELECT rollout_id FROM rollouts
WHERE list_has_any(trace_ids, (SELECT list(trace_id) FROM _ui_search))
