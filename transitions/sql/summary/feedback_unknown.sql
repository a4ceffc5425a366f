-- name: feedback_unknown
-- Feedback rows whose key matched no rollout, as `file:line key`, in file order.
SELECT file || ':' || line || ' ' || feedback_key AS entry FROM _feedback_detail
WHERE rollout_id IS NULL ORDER BY file, line
