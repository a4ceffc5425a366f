-- name: segment_rewards_empty
-- segment_rewards when no segment holds any: the columns of rewards, no rows.
-- reads:
-- creates: segment_rewards
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id, NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS name,
       NULL::DOUBLE AS value, NULL::VARCHAR AS source, NULL::BIGINT AS ts_ns, NULL::VARCHAR AS target_span_id,
       NULL::BOOLEAN AS is_primary
WHERE false
