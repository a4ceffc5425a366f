-- name: closure
-- _touched := _seeds' traces plus, transitively, every trace of a stored rollout that shares a trace
-- with them: a rollout is always recomputed from all of its traces together.
CREATE OR REPLACE TEMP TABLE _touched AS
WITH RECURSIVE edges AS (
    SELECT rollout_id, unnest(trace_ids) AS trace_id FROM _p_rollouts
),
reach(trace_id) AS (
    SELECT DISTINCT trace_id FROM _seeds WHERE trace_id IS NOT NULL
    UNION
    SELECT e2.trace_id
    FROM reach JOIN edges e1 ON e1.trace_id = reach.trace_id JOIN edges e2 ON e2.rollout_id = e1.rollout_id
)
SELECT DISTINCT trace_id FROM reach
