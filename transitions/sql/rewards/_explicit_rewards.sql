-- name: _explicit_rewards
-- Rewards the agent recorded in its own telemetry, one row each (docs/transitions.md; docs/transitions.md):
--   span       a span named spanrl.reward (spanrl.emit_reward); agentlightning.annotation
--              (agentlightning.reward.{i}.name/value, index 0 primary) and v0.2 agentlightning.reward
--              spans with a plain `reward` attribute; AgentOps v0.1 (Agent Lightning's @reward):
--              agentops.task.output / agentops.entity.output = JSON {"type": "reward", "value": x},
--              primary; a GenAI evaluation span (named gen_ai.evaluation.result or evaluat*) carrying
--              gen_ai.evaluation.score.value / .label
--   attribute  any other span carrying spanrl.reward, gen_ai.evaluation.score.value / .label, an
--              OpenInference evaluations.{i}.evaluation.score, or an attribute named by --reward-key
--   event      a span event named spanrl.reward or gen_ai.evaluation.result (or any event / log
--              record carrying spanrl.reward or gen_ai.evaluation.score.*), the same event sent as a
--              log record (logs: event_name + attributes; rollout by span, else by the call its
--              gen_ai.response.id names, else by trace), or an event / log-record attribute named by
--              --reward-key
-- A value is a number, a numeric string, a boolean (true 1, false 0) or a pass/fail-style label
-- (1: pass passed true correct yes success relevant; 0: fail failed false incorrect no failure
-- not_relevant irrelevant: spanrl_label_value in rollouts/macros.sql); gen_ai.evaluation.score.label is
-- read when score.value is absent.
-- A reward field whose value is none of these, or NaN/±Inf, stays as a row with value NULL: rewards
-- reports it as source `rejected`, and the final-reward choice (rollouts.sql, arg_max) skips it.
-- target_span_id is the span the reward hangs on (a reward span's parent, else the span itself).
-- Speed: the span facts (attribute keys, event names) pick the few candidate spans; only those are
-- read whole (attributes, events) and joined to their rollout.
-- reads: spans, logs, _span_facts, _span_tree, _trace_rollouts, _rollout_calls
-- creates: _explicit_rewards
WITH keys AS (  -- --reward-key names (spanrl_reward_keys), minus the attributes a built-in reads
    SELECT coalesce(list_filter(CAST(getvariable('spanrl_reward_keys') AS VARCHAR[]),
                                lambda k: k NOT IN ('spanrl.reward', 'gen_ai.evaluation.score.value',
                                                    'gen_ai.evaluation.score.label')), []) AS k
),
hinted AS (  -- the reward styles a span may hold, told by its attribute keys and event names (span facts,
             -- span_facts.sql): no attribute text is read for the spans that hold none
    SELECT f.trace_id, f.span_id, nullif(f.parent_span_id, '') AS parent_span_id, f."name", f.end_ns,
           f.small, f.small_attributes, f.small_events,
           has_attr(f.attr_keys, 'spanrl.reward') AS f_spanrl,
           f."name" IN ('agentlightning.annotation', 'agentlightning.reward') AS f_agl,
           contains(f.attr_keys, chr(31) || 'evaluations.') AS f_oi,
           contains(f.attr_keys, chr(31) || 'gen_ai.evaluation.score.') AS f_eval,
           has_attr(f.attr_keys, 'agentops.task.output') OR has_attr(f.attr_keys, 'agentops.entity.output') AS f_agentops,
           coalesce(list_bool_or(list_transform(keys.k, lambda x: has_attr(f.attr_keys, x))), false) AS f_keys,
           len(f.event_names) > 0 AS has_events
    FROM _span_facts f, keys
),
candidates AS (
    SELECT * FROM hinted WHERE f_spanrl OR f_agl OR f_oi OR f_eval OR f_agentops OR f_keys OR has_events
),
whole AS (  -- their attribute and event text: kept in the facts for small spans, read from the lake for the others
    SELECT trace_id, span_id, small_attributes AS attributes, small_events AS events FROM candidates WHERE small
    UNION ALL
    SELECT sp.trace_id, sp.span_id, sp.attributes, sp.events
    FROM spans sp SEMI JOIN (SELECT trace_id, span_id FROM candidates WHERE NOT small) b
        ON b.trace_id = sp.trace_id AND b.span_id = sp.span_id
),
s AS MATERIALIZED (  -- the candidate spans, whole, with their rollout: every branch below reads only these
    SELECT * FROM (
        SELECT h.* EXCLUDE (has_events, small, small_attributes, small_events), w.attributes, w.events, r.rollout_id,
               h.has_events AND (contains(CAST(w.events AS VARCHAR), 'spanrl.reward')
                                 OR contains(CAST(w.events AS VARCHAR), 'gen_ai.evaluation.')
                                 OR spanrl_may_hold_any(CAST(w.events AS VARCHAR), keys.k)) AS f_events
        FROM candidates h
        JOIN _span_tree r ON r.trace_id = h.trace_id AND r.span_id = h.span_id
        JOIN whole w ON w.trace_id = h.trace_id AND w.span_id = h.span_id, keys)
    WHERE f_spanrl OR f_agl OR f_oi OR f_eval OR f_agentops OR f_keys OR f_events
),
spanrl AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(attributes->>'spanrl.reward.name', 'reward') AS rname,
           attributes->>'spanrl.reward' AS raw, NULL::VARCHAR AS label,
           CASE WHEN name = 'spanrl.reward' THEN 'span' ELSE 'attribute' END AS source,
           end_ns AS ts_ns,
           CASE WHEN name = 'spanrl.reward' THEN parent_span_id ELSE span_id END AS target_span_id,
           coalesce(attributes->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM s
    WHERE f_spanrl AND (attributes->>'spanrl.reward') IS NOT NULL
),
agl_keys AS (
    SELECT trace_id, span_id, rollout_id, end_ns, parent_span_id, attributes,
           regexp_extract(unnest(json_keys(attributes)), '^agentlightning\.reward\.(\d+)\.value$', 1) AS idx
    FROM s
    WHERE f_agl
),
agl AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(json_extract_string(attributes, 'agentlightning.reward.' || idx || '.name'),
                    CASE WHEN idx = '0' THEN 'primary' ELSE 'reward.' || idx END) AS rname,
           json_extract_string(attributes, 'agentlightning.reward.' || idx || '.value') AS raw, NULL AS label,
           'span' AS source, end_ns AS ts_ns, parent_span_id AS target_span_id, idx = '0' AS is_primary
    FROM agl_keys WHERE idx <> ''
),
agl_v02 AS (
    SELECT trace_id, span_id, rollout_id, 'primary' AS rname, attributes->>'reward' AS raw, NULL AS label,
           'span' AS source, end_ns AS ts_ns, parent_span_id AS target_span_id, true AS is_primary
    FROM s
    WHERE f_agl AND (attributes->>'reward') IS NOT NULL
),
agentops_out AS (  -- Agent Lightning's reader: task output first, then entity output
    SELECT trace_id, span_id, rollout_id, end_ns, parent_span_id,
           TRY_CAST(attributes->>'agentops.task.output' AS JSON) AS t,
           TRY_CAST(attributes->>'agentops.entity.output' AS JSON) AS e
    FROM s
    WHERE f_agentops
),
agentops AS (
    SELECT trace_id, span_id, rollout_id, 'primary' AS rname,
           CASE WHEN t->>'type' = 'reward' THEN t->>'value' ELSE e->>'value' END AS raw, NULL AS label,
           'span' AS source, end_ns AS ts_ns, parent_span_id AS target_span_id, true AS is_primary
    FROM agentops_out
    WHERE coalesce(t->>'type' = 'reward', false) OR coalesce(e->>'type' = 'reward', false)
),
genai_eval AS (  -- GenAI evaluation attributes on a span (an evaluation span, or the evaluated span itself)
    SELECT trace_id, span_id, rollout_id,
           coalesce(attributes->>'gen_ai.evaluation.name', 'evaluation') AS rname,
           attributes->>'gen_ai.evaluation.score.value' AS raw,
           attributes->>'gen_ai.evaluation.score.label' AS label,
           CASE WHEN is_eval_span THEN 'span' ELSE 'attribute' END AS source, end_ns AS ts_ns,
           CASE WHEN is_eval_span THEN coalesce(parent_span_id, span_id) ELSE span_id END AS target_span_id,
           false AS is_primary
    FROM (SELECT *, name = 'gen_ai.evaluation.result' OR starts_with(lower(name), 'evaluat')
                    OR starts_with(name, 'gen_ai.evaluation') AS is_eval_span
          FROM s WHERE f_eval)
    WHERE (attributes->>'gen_ai.evaluation.score.value') IS NOT NULL
       OR (attributes->>'gen_ai.evaluation.score.label') IS NOT NULL
),
oi_keys AS (
    SELECT trace_id, span_id, rollout_id, end_ns, attributes,
           regexp_extract(unnest(json_keys(attributes)), '^evaluations\.(\d+)\.evaluation\.score$', 1) AS idx
    FROM s
    WHERE f_oi
      AND list_contains(list_transform(json_keys(attributes), lambda k: starts_with(k, 'evaluations.')), true)
),
openinference AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(json_extract_string(attributes, 'evaluations.' || idx || '.evaluation.name'), 'evaluation') AS rname,
           json_extract_string(attributes, 'evaluations.' || idx || '.evaluation.score') AS raw,
           json_extract_string(attributes, 'evaluations.' || idx || '.evaluation.label') AS label,
           'attribute' AS source, end_ns AS ts_ns, span_id AS target_span_id, false AS is_primary
    FROM oi_keys WHERE idx <> ''
),
key_attrs AS (  -- --reward-key on span attributes (a v0.2 Agent Lightning span's `reward` is read above)
    SELECT trace_id, span_id, rollout_id, key AS rname,
           json_extract_string(attributes, '$."' || key || '"') AS raw, NULL AS label,
           'attribute' AS source, end_ns AS ts_ns, span_id AS target_span_id, false AS is_primary
    FROM (SELECT s.*, unnest(keys.k) AS key FROM s, keys WHERE s.f_keys)
    WHERE NOT (f_agl AND key = 'reward')
      AND json_extract_string(attributes, '$."' || key || '"') IS NOT NULL
),
evs AS (
    SELECT trace_id, span_id, rollout_id, end_ns, unnest(TRY_CAST(CAST(events AS JSON) AS JSON[])) AS e
    FROM s
    WHERE f_events
),
ev_rewards AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(e->'attributes'->>'spanrl.reward.name', e->'attributes'->>'gen_ai.evaluation.name', 'reward') AS rname,
           coalesce(e->'attributes'->>'spanrl.reward', e->'attributes'->>'gen_ai.evaluation.score.value') AS raw,
           e->'attributes'->>'gen_ai.evaluation.score.label' AS label,
           'event' AS source, coalesce(spanrl_event_ns(e), end_ns) AS ts_ns, span_id AS target_span_id,
           coalesce(e->'attributes'->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM evs
    WHERE e->>'name' IN ('spanrl.reward', 'gen_ai.evaluation.result')
       OR (e->'attributes'->>'spanrl.reward') IS NOT NULL
       OR (e->'attributes'->>'gen_ai.evaluation.score.value') IS NOT NULL
       OR (e->'attributes'->>'gen_ai.evaluation.score.label') IS NOT NULL
),
ev_keys AS (  -- --reward-key on span-event attributes
    SELECT trace_id, span_id, rollout_id, key AS rname,
           json_extract_string(e->'attributes', '$."' || key || '"') AS raw, NULL AS label,
           'event' AS source, coalesce(spanrl_event_ns(e), end_ns) AS ts_ns, span_id AS target_span_id,
           false AS is_primary
    FROM (SELECT evs.*, unnest(keys.k) AS key FROM evs, keys)
    WHERE json_extract_string(e->'attributes', '$."' || key || '"') IS NOT NULL
),
lg0 AS (  -- log records that may hold a reward
    SELECT l.trace_id, l.span_id, l.time_ns, l.attributes,
           l.event_name IN ('spanrl.reward', 'gen_ai.evaluation.result')
               OR (contains(CAST(l.attributes AS VARCHAR), 'spanrl.reward')
                   AND (l.attributes->>'spanrl.reward') IS NOT NULL)
               OR (contains(CAST(l.attributes AS VARCHAR), 'gen_ai.evaluation.score.')
                   AND ((l.attributes->>'gen_ai.evaluation.score.value') IS NOT NULL
                        OR (l.attributes->>'gen_ai.evaluation.score.label') IS NOT NULL)) AS is_event,
           list_filter(keys.k, lambda x: spanrl_may_hold(CAST(l.attributes AS VARCHAR), x)) AS hit_keys
    FROM logs l, keys
    WHERE l.event_name IN ('spanrl.reward', 'gen_ai.evaluation.result')
       OR contains(CAST(l.attributes AS VARCHAR), 'spanrl.reward')
       OR contains(CAST(l.attributes AS VARCHAR), 'gen_ai.evaluation.score.')
       OR spanrl_may_hold_any(CAST(l.attributes AS VARCHAR), keys.k)
),
lg AS (  -- ... with their rollout and target: by span; else the LLM call whose gen_ai.response.id the
         -- record names (GenAI semconv, for evaluations without a span), else the trace's rollout
    SELECT coalesce(l.trace_id, rc.trace_id) AS trace_id, l.span_id, l.time_ns, l.attributes, l.is_event,
           l.hit_keys, coalesce(st.rollout_id, rc.rollout_id, r.rollout_id) AS rollout_id,
           CASE WHEN st.span_id IS NOT NULL THEN l.span_id ELSE coalesce(rc.span_id, l.span_id) END
               AS target_span_id
    FROM lg0 l
    LEFT JOIN _trace_rollouts r ON r.trace_id = l.trace_id
    LEFT JOIN _span_tree st ON st.trace_id = l.trace_id AND st.span_id = l.span_id
    LEFT JOIN (SELECT response_id, min(trace_id) AS trace_id, min(span_id) AS span_id,
                      min(rollout_id) AS rollout_id
               FROM _rollout_calls WHERE response_id IS NOT NULL GROUP BY response_id) rc
           ON st.span_id IS NULL AND rc.response_id = l.attributes->>'gen_ai.response.id'
    WHERE coalesce(st.rollout_id, rc.rollout_id, r.rollout_id) IS NOT NULL
      AND (l.is_event OR len(l.hit_keys) > 0)
),
log_events AS (
    SELECT trace_id, span_id, rollout_id,
           coalesce(attributes->>'spanrl.reward.name', attributes->>'gen_ai.evaluation.name', 'reward') AS rname,
           coalesce(attributes->>'spanrl.reward', attributes->>'gen_ai.evaluation.score.value') AS raw,
           attributes->>'gen_ai.evaluation.score.label' AS label,
           'event' AS source, time_ns AS ts_ns, target_span_id,
           coalesce(attributes->>'spanrl.reward.name', '') = 'primary' AS is_primary
    FROM lg WHERE is_event
),
log_keys AS (  -- --reward-key on log-record attributes
    SELECT trace_id, span_id, rollout_id, key AS rname,
           json_extract_string(attributes, '$."' || key || '"') AS raw, NULL AS label,
           'event' AS source, time_ns AS ts_ns, target_span_id, false AS is_primary
    FROM (SELECT lg.*, unnest(hit_keys) AS key FROM lg)
    WHERE json_extract_string(attributes, '$."' || key || '"') IS NOT NULL
),
found AS (
    SELECT * FROM spanrl
    UNION ALL SELECT * FROM agl
    UNION ALL SELECT * FROM agl_v02
    UNION ALL SELECT * FROM agentops
    UNION ALL SELECT * FROM genai_eval
    UNION ALL SELECT * FROM openinference
    UNION ALL SELECT * FROM key_attrs
    UNION ALL SELECT * FROM ev_rewards
    UNION ALL SELECT * FROM ev_keys
    UNION ALL SELECT * FROM log_events
    UNION ALL SELECT * FROM log_keys
),
valued AS (
    SELECT *, coalesce(spanrl_reward_value(raw), spanrl_label_value(raw), spanrl_label_value(label)) AS v
    FROM found
)
SELECT trace_id, span_id, rollout_id, rname AS name, CASE WHEN isfinite(v) THEN v END AS value, source, ts_ns,
       target_span_id, is_primary
FROM valued
