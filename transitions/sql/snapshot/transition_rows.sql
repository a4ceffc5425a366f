-- name: transition_rows
-- The builder's rows with their returns (advantage unset), under the name the digests and segment writer read.
SELECT * FROM transitions
