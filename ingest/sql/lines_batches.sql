-- name: lines_batches(${source_file})
-- Trace and log batches out of the numbered `lines` table (slow path).
-- Literal: ${source_file}.
CREATE OR REPLACE TEMP VIEW trace_batches AS
SELECT try_cast(doc AS STRUCT(resourceSpans otlp_resource_spans[])).resourceSpans AS resourceSpans,
       ${source_file} AS source_file, line_no
FROM lines WHERE try_cast(doc AS STRUCT(resourceSpans otlp_resource_spans[])).resourceSpans IS NOT NULL;

CREATE OR REPLACE TEMP VIEW log_batches AS
SELECT try_cast(doc AS STRUCT(resourceLogs otlp_resource_logs[])).resourceLogs AS resourceLogs,
       ${source_file} AS source_file, line_no
FROM lines WHERE try_cast(doc AS STRUCT(resourceLogs otlp_resource_logs[])).resourceLogs IS NOT NULL;
