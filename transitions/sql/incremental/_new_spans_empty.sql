-- name: _new_spans_empty
-- _new_spans when no lake span file appeared since the last build.
CREATE OR REPLACE TEMP TABLE _new_spans AS SELECT NULL::VARCHAR AS trace_id WHERE false
