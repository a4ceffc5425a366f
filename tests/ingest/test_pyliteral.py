"""py_literal_json (ingest/pyliteral.py): Python literals and JSON in, JSON out; anything else NULL."""

from __future__ import annotations

import duckdb

from spanrl.ingest.pyliteral import register_py_literal_json


def test_python_literals_become_json_and_the_rest_null() -> None:
    con = duckdb.connect()
    register_py_literal_json(con)
    register_py_literal_json(con)  # once per connection, however often asked
    rows = con.execute("""SELECT py_literal_json(v) FROM (VALUES
        ('[{''role'': ''user'', ''content'': "it''s"}, None, True, 1.5]'),
        ('{"already": "json"}'),
        ('[<object at 0x7f>]'),
        ('__import__("os").system("true")'),
        (NULL)) t(v)""").fetchall()
    assert [r[0] for r in rows] == ['[{"role":"user","content":"it\'s"},null,true,1.5]', '{"already":"json"}',
                                    None, None, None]
