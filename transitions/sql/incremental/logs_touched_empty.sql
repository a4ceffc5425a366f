-- name: logs_touched_empty
-- `logs` with no rows (no log file to read) and the lake's columns; the catalog is named because
-- `main.logs` inside a temp view would name this temp view itself.
CREATE OR REPLACE TEMP VIEW logs AS SELECT * FROM query_table(current_database() || '.main.logs') WHERE false
