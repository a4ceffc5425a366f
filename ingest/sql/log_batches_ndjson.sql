-- name: log_batches_ndjson(${source_file}, ${src}, ${max_object_size})
-- The fast path for log files (resourceLogs). Literals: ${src}, ${source_file}, ${max_object_size}.
CREATE OR REPLACE TEMP VIEW log_batches AS
SELECT resourceLogs, ${source_file} AS source_file, NULL::BIGINT AS line_no
FROM read_ndjson(${src}, columns = {'resourceLogs': 'otlp_resource_logs[]'},
                 format = 'newline_delimited', records = true, auto_detect = false,
                 ignore_errors = true, maximum_object_size = ${max_object_size})
