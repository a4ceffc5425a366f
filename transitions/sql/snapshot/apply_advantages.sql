-- name: apply_advantages
-- Returns and advantages of transition rows by the snapshot's credit mode, in (rollout_id, step) order.
-- Re-runnable over a snapshot on its own (docs/architecture.md); every reader of a snapshot fills
-- `advantage` this way. The mode's own statement is the relation credit_rows: credit.py puts
-- sql/credit/<mode>.sql in front of this file as a CTE (one file per mode, found by its name; a mode
-- this release does not know is refused, never run as another). Each mode reads transition_rows and
-- _rollout_adv (rollout_advantages.sql) and keeps every column in its place, so this order is the
-- only thing they share.
SELECT * FROM credit_rows ORDER BY rollout_id, step
