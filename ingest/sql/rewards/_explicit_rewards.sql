-- name: _explicit_rewards
-- Rewards the agent recorded in its own telemetry, one row each (DESIGN §5):
--   span       a span named spanrl.reward (spanrl.emit_reward), agentlightning.annotation
--              (agentlightning.reward.{i}.name/value, index 0 primary) or v0.2 agentlightning.reward
--              spans with a plain `reward` attribute
--   attribute  any other span carrying spanrl.reward, or OpenInference evaluations.{i}.evaluation.*
--   event      a span event named spanrl.reward or gen_ai.evaluation.result (score.value), or the same
--              event sent as a log record (the logs table, event_name + attributes, joined by span, else trace)
-- target_span_id is the span the reward hangs on (the reward span's parent, else the span itself).
WITH s AS (
    SELECT sp.*, r.rollout_id FROM spans sp JOIN _span_tree r USING (trace_id, span_id)
),
spanrl AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(attributes->>'spanrl.reward.name', 'reward') AS name,
           spanrl_reward_value(attributes->>'spanrl.reward') AS value,
           CASE WHEN name = 'spanrl.reward' THEN 'span' ELSE 'attribute' END AS source,
           end_ns AS ts_ns,
           CASE WHEN name = 'spanrl.reward' THEN nullif(parent_span_id, '') ELSE span_id END AS target_span_id,
           coalesce(attributes->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM s
    WHERE contains(CAST(attributes AS VARCHAR), 'spanrl.reward')  -- cheap test first: most spans have none
      AND attributes->>'spanrl.reward' IS NOT NULL
),
agl_keys AS (
    SELECT trace_id, span_id, rollout_id, end_ns, parent_span_id, attributes,
           regexp_extract(unnest(json_keys(attributes)), '^agentlightning\.reward\.(\d+)\.value$', 1) AS idx
    FROM s
    WHERE name IN ('agentlightning.annotation', 'agentlightning.reward')
),
agl AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(json_extract_string(attributes, 'agentlightning.reward.' || idx || '.name'),
                    CASE WHEN idx = '0' THEN 'primary' ELSE 'reward.' || idx END) AS name,
           spanrl_reward_value(json_extract_string(attributes, 'agentlightning.reward.' || idx || '.value')) AS value,
           'span' AS source, end_ns AS ts_ns, nullif(parent_span_id, '') AS target_span_id,
           idx = '0' AS is_primary
    FROM agl_keys WHERE idx <> ''
),
agl_v02 AS (
    SELECT trace_id, span_id, rollout_id, 'primary' AS name, spanrl_reward_value(attributes->>'reward') AS value,
           'span' AS source, end_ns AS ts_ns, nullif(parent_span_id, '') AS target_span_id, true AS is_primary
    FROM s
    WHERE name IN ('agentlightning.reward', 'agentlightning.annotation') AND attributes->>'reward' IS NOT NULL
),
oi_keys AS (
    SELECT trace_id, span_id, rollout_id, end_ns, attributes,
           regexp_extract(unnest(json_keys(attributes)), '^evaluations\.(\d+)\.evaluation\.score$', 1) AS idx
    FROM s
    WHERE contains(CAST(attributes AS VARCHAR), 'evaluations.')  -- cheap test before listing the keys
      AND list_contains(list_transform(json_keys(attributes), lambda k: starts_with(k, 'evaluations.')), true)
),
openinference AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(json_extract_string(attributes, 'evaluations.' || idx || '.evaluation.name'), 'evaluation') AS name,
           spanrl_reward_value(json_extract_string(attributes, 'evaluations.' || idx || '.evaluation.score')) AS value,
           'attribute' AS source, end_ns AS ts_ns, span_id AS target_span_id, false AS is_primary
    FROM oi_keys WHERE idx <> ''
),
evs AS (
    SELECT trace_id, span_id, rollout_id, end_ns, unnest(TRY_CAST(CAST(events AS JSON) AS JSON[])) AS e
    FROM s
    WHERE events IS NOT NULL AND CAST(events AS VARCHAR) NOT IN ('[]', '')
),
events AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(e->'attributes'->>'spanrl.reward.name', e->'attributes'->>'gen_ai.evaluation.name', 'reward') AS name,
           spanrl_reward_value(coalesce(e->'attributes'->>'spanrl.reward',
                                        e->'attributes'->>'gen_ai.evaluation.score.value')) AS value,
           'event' AS source, coalesce(spanrl_event_ns(e), end_ns) AS ts_ns, span_id AS target_span_id,
           coalesce(e->'attributes'->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM evs
    WHERE e->>'name' IN ('spanrl.reward', 'gen_ai.evaluation.result')
),
log_events AS (
    SELECT l.trace_id, l.span_id, coalesce(st.rollout_id, r.rollout_id) AS rollout_id,
           coalesce(l.attributes->>'spanrl.reward.name', l.attributes->>'gen_ai.evaluation.name', 'reward') AS name,
           spanrl_reward_value(coalesce(l.attributes->>'spanrl.reward',
                                        l.attributes->>'gen_ai.evaluation.score.value')) AS value,
           'event' AS source, l.time_ns AS ts_ns, l.span_id AS target_span_id,
           coalesce(l.attributes->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM logs l JOIN _trace_rollouts r USING (trace_id)
    LEFT JOIN _span_tree st ON st.trace_id = l.trace_id AND st.span_id = l.span_id
    WHERE l.event_name IN ('spanrl.reward', 'gen_ai.evaluation.result')
)
SELECT * FROM spanrl WHERE value IS NOT NULL
UNION ALL SELECT * FROM agl WHERE value IS NOT NULL
UNION ALL SELECT * FROM agl_v02 WHERE value IS NOT NULL
UNION ALL SELECT * FROM openinference WHERE value IS NOT NULL
UNION ALL SELECT * FROM events WHERE value IS NOT NULL
UNION ALL SELECT * FROM log_events WHERE value IS NOT NULL
