-- name: _feedback_detail(${files})
-- Which rollout each feedback file line resolved to (_feedback_detail.parquet, whole-lake).
CREATE VIEW _feedback_detail AS SELECT * FROM read_parquet(${files})
