-- name: feedback_rows
-- Normalise raw feedback rows (relation _feedback_raw: every file of DATA/feedback/, union by name,
-- with `filename` and `line`) to: file, line, rollout_id, trace_id, response_id, name, value, ts_ns,
-- plus `problem` (NULL when the row is usable). ts: ISO-8601 text or an epoch number in s, ms, us or ns.
WITH typed AS (
    SELECT filename AS file, line,
           nullif(CAST(rollout_id AS VARCHAR), '') AS rollout_id,
           nullif(CAST(trace_id AS VARCHAR), '') AS trace_id,
           nullif(CAST(response_id AS VARCHAR), '') AS response_id,
           nullif(CAST(name AS VARCHAR), '') AS name,
           CAST(value AS VARCHAR) AS value_text,
           spanrl_reward_value(value) AS value,
           nullif(CAST(ts AS VARCHAR), '') AS ts_text
    FROM _feedback_raw
),
timed AS (
    SELECT *,
           CASE
               WHEN ts_text IS NULL THEN NULL
               WHEN TRY_CAST(ts_text AS DOUBLE) IS NOT NULL THEN
                   CASE
                       WHEN abs(TRY_CAST(ts_text AS DOUBLE)) >= 1e17 THEN TRY_CAST(ts_text AS DOUBLE)
                       WHEN abs(TRY_CAST(ts_text AS DOUBLE)) >= 1e14 THEN TRY_CAST(ts_text AS DOUBLE) * 1e3
                       WHEN abs(TRY_CAST(ts_text AS DOUBLE)) >= 1e11 THEN TRY_CAST(ts_text AS DOUBLE) * 1e6
                       ELSE TRY_CAST(ts_text AS DOUBLE) * 1e9
                   END::BIGINT
               ELSE epoch_ns(TRY_CAST(ts_text AS TIMESTAMPTZ))
           END AS ts_ns
    FROM typed
)
SELECT file, line, rollout_id, trace_id, response_id, name, value, ts_ns,
       CASE
           WHEN rollout_id IS NULL AND trace_id IS NULL AND response_id IS NULL
               THEN 'no key: give rollout_id, trace_id or response_id'
           WHEN value IS NULL OR NOT isfinite(value)
               THEN 'value ' || coalesce('''' || value_text || '''', 'missing') || ' is not a number'
           WHEN ts_text IS NOT NULL AND ts_ns IS NULL
               THEN 'ts ''' || ts_text || ''' is neither ISO-8601 nor an epoch number'
       END AS problem
FROM timed
