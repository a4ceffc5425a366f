-- name: spans_touched_empty
-- `spans` with no rows (no span file to read) and the lake's columns; the catalog is named because
-- `main.spans` inside a temp view would name this temp view itself.
CREATE OR REPLACE TEMP VIEW spans AS SELECT * FROM query_table(current_database() || '.main.spans') WHERE false
