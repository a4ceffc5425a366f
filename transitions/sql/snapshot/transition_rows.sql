-- name: transition_rows
-- The builder's rows with their returns (advantage unset), under the name the digests and segment writer read.
-- reads: transitions
-- creates: transition_rows
SELECT * FROM transitions
