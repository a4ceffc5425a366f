-- name: _trace_rollouts
-- One row per trace: the rollout it belongs to (DESIGN §5). First match wins: spanrl.rollout_id
-- (span or resource attribute), agentlightning.rollout_id, the configured --rollout-key, the trace id.
-- Several traces may share a rollout (a session.id across requests, files and nights).
SELECT
    trace_id,
    coalesce(
        min(spanrl_attr(attributes, resource, 'spanrl.rollout_id')),
        min(spanrl_attr(attributes, resource, 'agentlightning.rollout_id')),
        min(spanrl_attr(attributes, resource, getvariable('spanrl_rollout_key'))),
        trace_id
    ) AS rollout_id
FROM spans
GROUP BY trace_id
