-- name: relation_kinds
-- Which relations of the connection are views (to hold in memory once) and which are tables already.
SELECT table_name, table_type FROM information_schema.tables ORDER BY table_type = 'VIEW'
