-- name: transition_rows(${files})
-- Every segment's stored transition rows (transitions.parquet), what the snapshot's AIR totals read.
-- reads:
-- creates: transition_rows
SELECT * FROM read_parquet(${files})
