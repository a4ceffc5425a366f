-- name: _changed_feedback($names)
-- The feedback files added, edited or removed since the last build (their names), bound as a list (seeds.sql).
-- reads:
-- creates: _changed_feedback
SELECT unnest($names::VARCHAR[]) AS name
