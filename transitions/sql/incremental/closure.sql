-- name: closure($stored)
-- _touched := _seeds' traces plus, transitively, every trace of a stored rollout that shares a trace
-- with them: a rollout is always recomputed from all of its traces together. $stored: whether any seed
-- is a stored trace (incremental.close_over_rollouts counts them); when none is (the common night of
-- brand-new traces) the closure adds nothing, and DuckDB folds the bound false into an empty edge list
-- instead of reading every stored rollout.
-- reads: _seeds, _p_rollouts
-- creates: _touched
WITH RECURSIVE edges AS (
    SELECT rollout_id, unnest(trace_ids) AS trace_id FROM _p_rollouts WHERE $stored
),
reach(trace_id) AS (
    SELECT DISTINCT trace_id FROM _seeds WHERE trace_id IS NOT NULL
    UNION
    SELECT e2.trace_id
    FROM reach JOIN edges e1 ON e1.trace_id = reach.trace_id JOIN edges e2 ON e2.rollout_id = e1.rollout_id
)
SELECT DISTINCT trace_id FROM reach
