-- name: coverage(${files})
-- The build's coverage rows over every segment (coverage.parquet).
-- reads:
-- creates: coverage
SELECT * FROM read_parquet(${files}, union_by_name = true)
