-- name: rollout_mates
-- The traces that name a rollout id one of the quarantined traces (_q_traces) names, on a span or its
-- resource: they go to quarantine with it, so no rollout is built from part of its traces. Read
-- straight from the attributes (not the span facts: stage 2's own relations may be what failed).
WITH named AS (
    SELECT DISTINCT trace_id, coalesce(attributes->>'spanrl.rollout_id', attributes->>'agentlightning.rollout_id',
                                       resource->>'spanrl.rollout_id', resource->>'agentlightning.rollout_id') AS rollout_id
    FROM lake_catalog.main.spans
    WHERE coalesce(attributes->>'spanrl.rollout_id', attributes->>'agentlightning.rollout_id',
                   resource->>'spanrl.rollout_id', resource->>'agentlightning.rollout_id') IS NOT NULL
)
SELECT DISTINCT n.trace_id FROM named AS n
WHERE n.rollout_id IN (SELECT rollout_id FROM named WHERE trace_id IN (SELECT trace_id FROM _q_traces))
