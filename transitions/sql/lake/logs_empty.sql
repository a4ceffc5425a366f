-- name: logs_empty
-- `logs` when the plan reads no log file: no rows, the lake's columns (the catalog named, as in
-- spans_empty.sql).
-- reads: _lake_traces
-- creates: logs
SELECT * FROM query_table(current_database() || '.main.logs') WHERE false
