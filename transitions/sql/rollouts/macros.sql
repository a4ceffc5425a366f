-- name: rollouts_macros
-- Small scalar helpers shared by the rollout, reward and AIR SQL (created once per connection).
-- Variables read (SET VARIABLE by spanrl.ingest.rollouts.set_variables; NULL = not configured):
--   spanrl_rollout_key, spanrl_task_key, spanrl_agent_regex, spanrl_settle_ns, spanrl_missing_reward,
--   spanrl_reward_keys (VARCHAR[] of --reward-key attribute names)

-- A span status that means failure, whatever spelling stage 1 chose (ERROR, STATUS_CODE_ERROR, 2).
CREATE OR REPLACE MACRO spanrl_is_error(code) AS
    upper(CAST(code AS VARCHAR)) IN ('ERROR', 'STATUS_CODE_ERROR', '2');

-- A reward attribute as a number: numbers, numeric strings and booleans (true = 1, false = 0).
CREATE OR REPLACE MACRO spanrl_reward_value(v) AS
    CASE lower(CAST(v AS VARCHAR))
        WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0
        ELSE TRY_CAST(CAST(v AS VARCHAR) AS DOUBLE)
    END;

-- A pass/fail-style label as a reward: 1 or 0, NULL for any other text (blanks and dashes as '_').
CREATE OR REPLACE MACRO spanrl_label_value(v) AS
    CASE regexp_replace(lower(trim(CAST(v AS VARCHAR))), '[\s-]+', '_', 'g')
        WHEN 'pass' THEN 1.0 WHEN 'passed' THEN 1.0 WHEN 'true' THEN 1.0 WHEN 'correct' THEN 1.0
        WHEN 'yes' THEN 1.0 WHEN 'success' THEN 1.0 WHEN 'relevant' THEN 1.0
        WHEN 'fail' THEN 0.0 WHEN 'failed' THEN 0.0 WHEN 'false' THEN 0.0 WHEN 'incorrect' THEN 0.0
        WHEN 'no' THEN 0.0 WHEN 'failure' THEN 0.0 WHEN 'not_relevant' THEN 0.0 WHEN 'irrelevant' THEN 0.0
    END;

-- Speed: a key whose text is absent from a JSON text cannot be in it, so this cheap substring test
-- lets callers skip the JSON parse for most rows (keys with '"', '\' or non-ASCII may be escaped in
-- the JSON: they always pass). _any: one of several keys (false for an empty or NULL list).
CREATE OR REPLACE MACRO spanrl_may_hold(text, key) AS
    contains(text, key) OR contains(key, '"') OR contains(key, '\') OR strlen(key) <> length(key);
CREATE OR REPLACE MACRO spanrl_may_hold_any(text, keys) AS
    coalesce(list_bool_or(list_transform(keys, lambda x: spanrl_may_hold(text, x))), false);

-- An attribute looked up on the span first, then on its resource (NULL when key is NULL).
CREATE OR REPLACE MACRO spanrl_json_key(j, key) AS CASE
    WHEN j IS NULL OR key IS NULL THEN NULL
    WHEN spanrl_may_hold(CAST(j AS VARCHAR), key) THEN json_extract_string(j, key) END;
CREATE OR REPLACE MACRO spanrl_attr(attributes, resource, key) AS
    coalesce(spanrl_json_key(attributes, key), spanrl_json_key(resource, key));

-- Event timestamp in ns, tolerant of the field spellings OTLP JSON and stage 1 may use.
CREATE OR REPLACE MACRO spanrl_event_ns(e) AS
    coalesce(TRY_CAST(e->>'time_unix_nano' AS BIGINT), TRY_CAST(e->>'timeUnixNano' AS BIGINT),
             TRY_CAST(e->>'time_ns' AS BIGINT), TRY_CAST(e->>'ts_ns' AS BIGINT));

-- Does a JSON value have the JSON-schema type `t`? (integer also accepts 3.0-free ints only.)
CREATE OR REPLACE MACRO spanrl_json_type_ok(v, t) AS
    CASE t
        WHEN 'string' THEN json_type(v) = 'VARCHAR'
        WHEN 'integer' THEN json_type(v) IN ('BIGINT', 'UBIGINT')
        WHEN 'number' THEN json_type(v) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
        WHEN 'boolean' THEN json_type(v) = 'BOOLEAN'
        WHEN 'array' THEN json_type(v) = 'ARRAY'
        WHEN 'object' THEN json_type(v) = 'OBJECT'
        WHEN 'null' THEN json_type(v) = 'NULL'
        ELSE true
    END;

-- Tool-call arguments valid for the declared JSON schema: a JSON object, every required key present,
-- every present key of its declared type, no undeclared key when additionalProperties is false.
-- Arguments that were not captured (NULL) count as valid: absence of evidence is not an error.
CREATE OR REPLACE MACRO spanrl_args_valid(args, schema) AS
    CASE
        WHEN args IS NULL THEN true
        WHEN NOT json_valid(CAST(args AS VARCHAR)) THEN false
        WHEN json_type(CAST(args AS VARCHAR)::JSON) <> 'OBJECT' THEN false
        WHEN schema IS NULL THEN true
        ELSE
            coalesce(list_bool_and(list_transform(
                coalesce(TRY_CAST(json_extract(schema, '$.required') AS VARCHAR[]), []),
                lambda k: json_extract(CAST(args AS VARCHAR)::JSON, k) IS NOT NULL)), true)
            AND coalesce(list_bool_and(list_transform(
                json_keys(CAST(args AS VARCHAR)::JSON),
                lambda k: CASE
                    WHEN json_extract(json_extract(schema, '$.properties'), k) IS NULL
                        THEN coalesce(json_extract_string(schema, '$.additionalProperties'), 'true') <> 'false'
                    ELSE spanrl_json_type_ok(json_extract(CAST(args AS VARCHAR)::JSON, k),
                        json_extract_string(json_extract(json_extract(schema, '$.properties'), k), '$.type'))
                END)), true)
    END;
