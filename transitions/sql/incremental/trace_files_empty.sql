-- name: trace_files_empty
-- traces.sql's files part when there is no lake file to read.
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS filename WHERE false
