-- name: otlp_types
-- DuckDB types for OTLP/JSON lines (traces and logs) and macros that turn OTLP values
-- into plain JSON. Run once per ingest connection, before spans_load.sql / logs_load.sql.
--
-- Attribute values are declared as JSON, not as a struct: auto-detection fails on value types
-- missing from its sample and an explicit struct silently drops unknown fields (docs/lake.md).
-- DuckDB stores a JSON field minified, so a scalar AnyValue reads as '{"stringValue":...}' and
-- the macros below cut the value out by prefix; anything else is kept as it came.

CREATE TYPE otlp_kv AS STRUCT("key" VARCHAR, "value" JSON);
CREATE TYPE otlp_resource AS STRUCT(attributes otlp_kv[]);
CREATE TYPE otlp_scope AS STRUCT("name" VARCHAR, "version" VARCHAR, attributes otlp_kv[]);
CREATE TYPE otlp_event AS STRUCT(timeUnixNano VARCHAR, "name" VARCHAR, attributes otlp_kv[]);
CREATE TYPE otlp_link AS STRUCT(traceId VARCHAR, spanId VARCHAR, traceState VARCHAR, attributes otlp_kv[], flags BIGINT);
CREATE TYPE otlp_status AS STRUCT(message VARCHAR, code VARCHAR);
CREATE TYPE otlp_span AS STRUCT(
    traceId VARCHAR, spanId VARCHAR, traceState VARCHAR, parentSpanId VARCHAR, flags BIGINT,
    "name" VARCHAR, kind VARCHAR, startTimeUnixNano VARCHAR, endTimeUnixNano VARCHAR,
    attributes otlp_kv[], events otlp_event[], links otlp_link[], status otlp_status);
CREATE TYPE otlp_scope_spans AS STRUCT(scope otlp_scope, spans otlp_span[]);
CREATE TYPE otlp_resource_spans AS STRUCT(resource otlp_resource, scopeSpans otlp_scope_spans[]);
CREATE TYPE otlp_log_record AS STRUCT(
    timeUnixNano VARCHAR, observedTimeUnixNano VARCHAR, severityNumber VARCHAR, severityText VARCHAR,
    body JSON, attributes otlp_kv[], flags BIGINT, traceId VARCHAR, spanId VARCHAR, eventName VARCHAR);
CREATE TYPE otlp_scope_logs AS STRUCT(scope otlp_scope, logRecords otlp_log_record[]);
CREATE TYPE otlp_resource_logs AS STRUCT(resource otlp_resource, scopeLogs otlp_scope_logs[]);

-- Hex ids (collector JSON; uppercase in the OTLP spec examples) or base64 ids (protobuf JSON
-- mapping, what we get from format: proto files). All-zero or empty ids are missing ids.
CREATE MACRO otlp_id(x, n) AS CASE
    WHEN x IS NULL OR x = '' OR x = repeat('0', 2 * n) THEN NULL
    WHEN length(x) = 2 * n THEN lower(x)
    WHEN length(x) = ((n + 2) // 3) * 4 THEN nullif(try(lower(hex(from_base64(x)))), repeat('0', 2 * n))
    ELSE NULL END;

CREATE MACRO otlp_ns(x) AS try_cast(x AS BIGINT);

-- One AnyValue (as minified JSON) -> plain JSON text. int64 as a number, bytes as base64,
-- NaN/Infinity stay strings (JSON has no such numbers), unknown value kinds are kept whole.
CREATE MACRO otlp_scalar(v) AS CASE
    WHEN v IS NULL OR v = '{}' THEN 'null'
    WHEN starts_with(v, '{"stringValue":') THEN v[16:-2]
    WHEN starts_with(v, '{"intValue":') THEN coalesce(CAST(try_cast(trim(v[13:-2], '"') AS BIGINT) AS VARCHAR), v[13:-2])
    WHEN starts_with(v, '{"doubleValue":') THEN v[16:-2]
    WHEN starts_with(v, '{"boolValue":') THEN v[14:-2]
    WHEN starts_with(v, '{"bytesValue":') THEN v[15:-2]
    ELSE v END;

-- Arrays and kvlists, nested up to three levels (deeper values stay in OTLP form). Each level
-- calls the one below once, on a lambda variable, so the expanded expression stays small.
CREATE MACRO otlp_is_kv(v) AS starts_with(v, '{"kvlistValue":');
CREATE MACRO otlp_is_nested(v) AS starts_with(v, '{"arrayValue":') OR starts_with(v, '{"kvlistValue":');
-- entries of an array or kvlist: {k: '"key":' or '', v: the AnyValue}
CREATE MACRO otlp_entries(v) AS list_transform(json_extract(v, '$.*.values[*]'), lambda x: {
    'k': CASE WHEN starts_with(v, '{"kvlistValue":') THEN to_json(json_extract_string(x, '$.key')) || ':' ELSE '' END,
    'v': CASE WHEN starts_with(v, '{"kvlistValue":') THEN json_extract(x, '$.value') ELSE x END});
CREATE MACRO otlp_open(v) AS CASE WHEN otlp_is_kv(v) THEN '{' ELSE '[' END;
CREATE MACRO otlp_close(v) AS CASE WHEN otlp_is_kv(v) THEN '}' ELSE ']' END;

CREATE MACRO otlp_value1(v) AS CASE WHEN otlp_is_nested(v) THEN otlp_open(v) || coalesce(array_to_string(
    list_transform(otlp_entries(v), lambda e: e.k || otlp_scalar(e.v)), ','), '') || otlp_close(v)
    ELSE otlp_scalar(v) END;
CREATE MACRO otlp_value2(v) AS CASE WHEN otlp_is_nested(v) THEN otlp_open(v) || coalesce(array_to_string(
    list_transform(otlp_entries(v), lambda e: e.k || otlp_value1(e.v)), ','), '') || otlp_close(v)
    ELSE otlp_scalar(v) END;
CREATE MACRO otlp_value3(v) AS CASE WHEN otlp_is_nested(v) THEN otlp_open(v) || coalesce(array_to_string(
    list_transform(otlp_entries(v), lambda e: e.k || otlp_value2(e.v)), ','), '') || otlp_close(v)
    ELSE otlp_scalar(v) END;

CREATE MACRO otlp_value4(v) AS CASE WHEN otlp_is_nested(v) THEN otlp_open(v) || coalesce(array_to_string(
    list_transform(otlp_entries(v), lambda e: e.k || otlp_value3(e.v)), ','), '') || otlp_close(v)
    ELSE otlp_scalar(v) END;
CREATE MACRO otlp_value5(v) AS CASE WHEN otlp_is_nested(v) THEN otlp_open(v) || coalesce(array_to_string(
    list_transform(otlp_entries(v), lambda e: e.k || otlp_value4(e.v)), ','), '') || otlp_close(v)
    ELSE otlp_scalar(v) END;
-- KeyValue list -> JSON object {key: plain value}. The text is checked once; a list that does
-- not make a valid object (null keys, odd values) is kept as its raw key/value list.
-- Span, resource and link attributes hold scalars and arrays of scalars (an SDK cannot set
-- more), so two levels (one for resource/link) are plenty; nested log-record and span-event attributes go through otlp_any_json (any depth), log bodies get five (a gen_ai.choice
-- body is kvlist > kvlist > array > kvlist > kvlist). Each level costs DuckDB binding time.
CREATE MACRO otlp_attrs(kvs) AS CASE
    WHEN kvs IS NULL OR len(kvs) = 0 THEN '{}'::JSON
    ELSE coalesce(
        try_cast('{' || array_to_string(list_transform(kvs,
            lambda kv: to_json(kv."key") || ':' || otlp_value2(kv."value")), ',') || '}' AS JSON),
        to_json(kvs)) END;

CREATE MACRO otlp_attrs_flat(kvs) AS CASE
    WHEN kvs IS NULL OR len(kvs) = 0 THEN '{}'::JSON
    ELSE coalesce(
        try_cast('{' || array_to_string(list_transform(kvs,
            lambda kv: to_json(kv."key") || ':' || otlp_value1(kv."value")), ',') || '}' AS JSON),
        to_json(kvs)) END;

-- Log-record attributes: GenAI >= 1.37 events carry whole conversations as nested AnyValues, deeper
-- than macros can go (each level multiplies binding time), so a nested value goes through
-- otlp_any_json (ingest/anyvalue.py, registered by the loader): any depth, one Python call per value.
CREATE MACRO otlp_attrs_deep(kvs) AS CASE
    WHEN kvs IS NULL OR len(kvs) = 0 THEN '{}'::JSON
    ELSE coalesce(
        try_cast('{' || array_to_string(list_transform(kvs,
            lambda kv: to_json(kv."key") || ':' || CASE WHEN otlp_is_nested(kv."value") THEN otlp_any_json(kv."value")
                                                      ELSE otlp_scalar(kv."value") END), ',') || '}' AS JSON),
        to_json(kvs)) END;

CREATE MACRO otlp_plain(v) AS coalesce(try_cast(otlp_value5(v) AS JSON), v);

CREATE MACRO otlp_service_name(kvs) AS
    json_extract_string(otlp_scalar(list_filter(kvs, lambda kv: kv."key" = 'service.name')[1]."value"), '$');

CREATE MACRO otlp_span_kind(k) AS CASE
    WHEN starts_with(k, 'SPAN_KIND_') THEN k[11:]
    ELSE coalesce(['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'][try_cast(k AS INTEGER)], 'UNSPECIFIED') END;

CREATE MACRO otlp_status_code(c) AS CASE
    WHEN c IN ('1', 'STATUS_CODE_OK') THEN 'OK'
    WHEN c IN ('2', 'STATUS_CODE_ERROR') THEN 'ERROR'
    ELSE 'UNSET' END;

CREATE MACRO otlp_date(ns) AS strftime(make_timestamp(coalesce(ns, 0) // 1000), '%Y-%m-%d');

-- The content key of a log record (log records carry no id): same record twice = same key.
CREATE MACRO log_key(r) AS md5(concat_ws(chr(31), r.trace_id, r.span_id, r.time_ns, r.observed_time_ns,
    r.event_name, r.severity_number, r.body, r.attributes, r.service_name, r.scope_name));
