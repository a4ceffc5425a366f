-- name: unreadable_values
-- Values that were read as NULL instead of stopping the build (coverage.unreadable), per reason and
-- convention: what the summary and the manifest count.
SELECT u.reason || ' (' || coalesce(c.convention, '?') || ')' AS k, count(*) AS n
FROM coverage AS c, unnest(c.unreadable) AS t(u)
GROUP BY 1 ORDER BY 2 DESC, 1
