-- name: _air_rule_hits
-- Which AIR rules each candidate span matches, in one pass over _air_candidates.
-- A template: spanrl.transitions.air replaces /*RULE_CASES*/ with one `CASE WHEN (<rule predicate>) THEN <index> END`
-- per rule (the predicates are the user's SQL from spanrl.toml [air], validated one by one first).
-- reads: _air_candidates
-- creates: _air_rule_hits
SELECT trace_id, span_id, rollout_id, target_span_id, ts_ns, rule_index
FROM (
    SELECT c.trace_id, c.span_id, c.rollout_id, c.target_span_id, c.anchor_ns AS ts_ns,
           unnest(CAST([/*RULE_CASES*/] AS INTEGER[])) AS rule_index
    FROM _air_candidates c
)
WHERE rule_index IS NOT NULL
