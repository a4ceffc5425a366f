-- name: schema_columns
-- Every column of every table and view the UI's connection can name, for the SQL page's side list
-- (the page keeps only spanrl.query.sql.relation_names, so DuckDB's own and internal ones are left out).
SELECT table_name, column_name, data_type
FROM information_schema.columns
ORDER BY table_name, ordinal_position
