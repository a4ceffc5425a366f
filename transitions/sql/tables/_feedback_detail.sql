-- name: _feedback_detail(${files})
-- Which rollout each feedback file line resolved to (_feedback_detail.parquet, whole-lake).
-- reads:
-- creates: _feedback_detail
SELECT * FROM read_parquet(${files})
