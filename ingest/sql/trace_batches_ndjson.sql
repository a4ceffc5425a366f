-- name: trace_batches_ndjson(${source_file}, ${src}, ${max_object_size})
-- The fast path. One row per OTLP/JSON line of ${src}; a line that is not
-- JSON or not a trace batch reads as resourceSpans NULL (ignore_errors) and is sorted out later.
-- Literals: ${src} (file read), ${source_file} (the span file it came from), ${max_object_size}
-- (read_ndjson reads a line up to about twice it: load.py tries DuckDB's 16 MiB, then a bigger one).
CREATE OR REPLACE TEMP VIEW trace_batches AS
SELECT resourceSpans, ${source_file} AS source_file, NULL::BIGINT AS line_no
FROM read_ndjson(${src}, columns = {'resourceSpans': 'otlp_resource_spans[]'},
                 format = 'newline_delimited', records = true, auto_detect = false,
                 ignore_errors = true, maximum_object_size = ${max_object_size})
