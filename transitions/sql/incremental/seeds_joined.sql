-- name: seeds_joined
-- After a partial run, the seeds of the next closure round (closure.sql, the _touched step run again):
-- every trace of a stored rollout a recomputed trace turned out to belong to, and the stored twins
-- (_twin_traces). Appended to the plan's _seeds (the _touched traces need not be: the closure of the
-- seeds already holds them), so no relation is made outside the steps.
INSERT INTO _seeds
SELECT trace_id, 'joined an older rollout' FROM (
    SELECT t.trace_id FROM (SELECT unnest(trace_ids) AS trace_id, rollout_id FROM _p_rollouts) t
    SEMI JOIN rollouts r ON r.rollout_id = t.rollout_id
    UNION SELECT trace_id FROM _twin_traces
)
