-- name: _air_hits
-- Every AIR rule hit with the rule's name and value (hits from the generated _air_rule_hits, rules from the bound table _air_rules).
-- reads: _air_rule_hits, _air_rules
-- creates: _air_hits
SELECT h.trace_id, h.span_id, h.rollout_id, r.name, r.value, 'air' AS source, h.ts_ns, h.target_span_id,
       false AS is_primary
FROM _air_rule_hits h JOIN _air_rules r USING (rule_index)
