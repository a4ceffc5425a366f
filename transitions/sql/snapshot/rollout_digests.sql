-- name: rollout_digests
-- One row per rollout of transition rows (relation transition_rows): its task, reward (the input of
-- rollout_advantages.sql), row count and a sha256 digest of its rows in step order, every column but
-- snapshot_id (a built snapshot's rows hold no advantage: it comes from the snapshot's advantages
-- table, hashed on its own; a snapshot written from a table keeps the advantages its rows carry). A snapshot's content hash is built from these digests in rollout order (snapshot.py), so it
-- depends on the rows only, never on how they are split into parts or segments. spanrl_sha256 is
-- sha256 by OpenSSL (transitions/hashing.py, registered on the connection): the same hex digest in less than half the CPU time (bench/pieces/digests.py).
-- reads: transition_rows
-- creates: _digests
SELECT rollout_id, any_value(task_id) AS task_id, any_value(final_reward) AS r, count(*) AS n_rows,
       any_value(source_files) AS source_files,
       spanrl_sha256(string_agg(CAST(ROW(rollout_id, task_id, trace_id, span_id, step, n_steps, agent_name, model,
                                  prompt_messages, tools, response_message, finish_reason, prompt_token_ids, response_token_ids,
                                  response_logprobs, token_source, temperature, final_reward, step_reward,
                                  "return", advantage, is_last, source_files) AS VARCHAR), chr(10) ORDER BY step)) AS digest
FROM transition_rows
GROUP BY rollout_id
ORDER BY rollout_id
