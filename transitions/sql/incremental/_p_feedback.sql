-- name: _p_feedback(${files})
-- The last build's feedback rows (_feedback_detail.parquet): which rollout each feedback file line resolved to.
-- reads:
-- creates: _p_feedback
SELECT file, line, rollout_id FROM read_parquet(${files})
