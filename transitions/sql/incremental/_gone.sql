-- name: _gone($paths)
-- The lake files the last build read that are gone since (retention, compaction), bound as a list (seeds.sql).
-- reads:
-- creates: _gone
SELECT unnest($paths::VARCHAR[]) AS path
