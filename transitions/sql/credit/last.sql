-- name: last()
-- Credit last: only the rollout's last call gets its return r and advantage A_r, every other call 0.
-- A credit mode: every column of transition_rows in its place, "return" and advantage replaced (identical.sql).
SELECT tr.* REPLACE (
    CASE WHEN tr.is_last THEN adv.r ELSE 0.0 END AS "return",
    CASE WHEN tr.is_last THEN adv.a_r ELSE 0.0 END AS advantage
)
FROM transition_rows tr
JOIN _rollout_adv adv USING (rollout_id)
