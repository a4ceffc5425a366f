-- name: lines_split(${src}, $first_line, $ends_with_newline)
-- The slow, line-numbered path for a file that had a bad line. One row per
-- non-blank line of the text chunk ${src}, numbered from $first_line, parsed as JSON when it is.
-- $ends_with_newline: false when the chunk is the torn end of a closed file.
CREATE OR REPLACE TEMP TABLE lines AS
WITH split AS (
    SELECT unnest(ls) AS line, unnest(range(1, len(ls) + 1)) AS i, len(ls) AS n
    FROM (SELECT string_split(content, chr(10)) AS ls FROM read_text(${src}))
)
SELECT CAST($first_line AS BIGINT) + i - 1 AS line_no,
       rtrim(line, chr(13)) AS line,
       try_cast(rtrim(line, chr(13)) AS JSON) AS doc,
       i = n AND NOT $ends_with_newline AS torn
FROM split
WHERE trim(line, ' ' || chr(9) || chr(13)) <> ''
