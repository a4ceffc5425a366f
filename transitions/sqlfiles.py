"""Stage 2's SQL files (``transitions/sql/``): rollouts, rewards, feedback, snapshot rows."""

from spanrl.sqlfiles import SqlFiles

_SQL = SqlFiles("spanrl.transitions")
read_sql = _SQL.read
render_sql = _SQL.render
