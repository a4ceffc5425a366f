-- name: _new_spans_empty
-- _new_spans when no lake span file appeared since the last build.
-- reads:
-- creates: _new_spans
SELECT NULL::VARCHAR AS trace_id WHERE false
