-- name: spans_empty
-- `spans` when the plan reads no span file: no rows, the lake's columns. The catalog is named because
-- `main.spans` inside a temp view would name this temp view itself.
-- reads: _lake_traces
-- creates: spans
SELECT * FROM query_table(current_database() || '.main.spans') WHERE false
