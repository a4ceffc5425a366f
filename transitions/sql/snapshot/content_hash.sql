-- name: content_hash($schema_version)
-- A snapshot's content hash: sha256 over one line per rollout in rollout order (docs/transitions.md).
-- Each line is `rollout_id digest a_r` (`-` when the rows carry their own advantage) and, for advantages
-- tables that have them, ` a_air air_scale` (NULL otherwise, adding nothing: a snapshot written before AIR
-- joined the group statistics keeps its hash, and one written after differs from it). Reads the relations
-- _hash_digests (rollout_id, digest) and _hash_advantages (rollout_id, a_r, a_air, air_scale).
-- spanrl_sha256: sha256 by OpenSSL (transitions/hashing.py, registered by snapshot.hash_content).
SELECT spanrl_sha256('spanrl-transitions-v' || $schema_version || chr(10) || coalesce(string_agg(
           d.rollout_id || ' ' || d.digest || ' ' || coalesce(CAST(a.a_r AS VARCHAR), '-')
           || coalesce(' ' || CAST(a.a_air AS VARCHAR) || ' ' || CAST(a.air_scale AS VARCHAR), ''),
           chr(10) ORDER BY d.rollout_id), '')) AS content_hash
FROM _hash_digests d LEFT JOIN _hash_advantages a USING (rollout_id)
