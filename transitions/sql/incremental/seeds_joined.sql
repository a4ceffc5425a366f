-- name: seeds_joined
-- _seeds again after a partial run (closed over rollouts next): the touched traces, every trace of a
-- stored rollout a recomputed trace turned out to belong to, and the stored twins (_twin_traces).
CREATE OR REPLACE TEMP TABLE _seeds AS
SELECT trace_id FROM _touched
UNION SELECT t.trace_id FROM (SELECT unnest(trace_ids) AS trace_id, rollout_id FROM _p_rollouts) t
SEMI JOIN rollouts r ON r.rollout_id = t.rollout_id
UNION SELECT trace_id FROM _twin_traces
