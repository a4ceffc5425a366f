-- name: seeds
-- The traces an incremental build must recompute before closing over rollouts, each with why:
-- spans or log records in new lake files (a spanless log record counts for the call whose
-- gen_ai.response.id it names), traces that lived in lake files now gone (retention, compaction),
-- traces of rollouts still waiting (the lake's clock moved on), and traces whose rollout's feedback
-- changed: the rows of every added, edited or removed feedback file, old (_p_feedback) and new
-- (_feedback), by rollout id, trace id or response id.
-- Inputs: _new_spans(trace_id), _new_logs(trace_id, response_id), _gone(path), _changed_feedback(name),
-- _feedback (this run's feedback rows), _p_traces, _p_rollouts, _p_responses, _p_feedback (last build).
-- Output: _seeds(trace_id, why), closed over rollouts by closure.sql.
-- reads: _feedback, _changed_feedback, _p_feedback, _p_responses, _new_spans, _new_logs, _p_traces, _gone, _p_rollouts
-- creates: _seeds
WITH changed_feedback AS (
    SELECT rollout_id, trace_id, response_id FROM _feedback
    WHERE parse_filename(file) IN (SELECT name FROM _changed_feedback)
),
feedback_rollouts AS (
    SELECT rollout_id FROM _p_feedback WHERE parse_filename(file) IN (SELECT name FROM _changed_feedback)
    UNION SELECT rollout_id FROM changed_feedback
    UNION SELECT p.rollout_id FROM changed_feedback f JOIN _p_responses p USING (response_id)
)
SELECT trace_id, 'new lake files' AS why FROM _new_spans
UNION ALL
SELECT trace_id, 'new lake files' FROM _new_logs WHERE trace_id IS NOT NULL
UNION ALL
SELECT r.trace_id, 'new lake files' FROM _new_logs l JOIN _p_responses r USING (response_id) WHERE l.trace_id IS NULL
UNION ALL
SELECT trace_id, 'lake files gone' FROM _p_traces
WHERE list_has_any(lake_files, (SELECT coalesce(list(path), []::VARCHAR[]) FROM _gone))
UNION ALL
SELECT unnest(trace_ids), 'rollouts waiting' FROM _p_rollouts WHERE NOT complete
UNION ALL
SELECT unnest(trace_ids), 'feedback changed' FROM _p_rollouts
WHERE rollout_id IN (SELECT rollout_id FROM feedback_rollouts)
UNION ALL
SELECT trace_id, 'feedback changed' FROM changed_feedback WHERE trace_id IN (SELECT trace_id FROM _p_traces)
