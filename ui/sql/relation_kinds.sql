-- name: relation_kinds
-- Which relations of the connection are views (to hold in memory once) and which are tables already
-- (a temp table shadowing a view of the same name, as the connection computes on a lake never built).
SELECT table_name, table_type FROM information_schema.tables ORDER BY table_type <> 'VIEW'  -- a table wins a shared name
