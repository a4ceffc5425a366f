"""Read-only SQL over the trace lake and the stage-2 views (``spanrl sql``)."""

from spanrl.query.connection import connect
from spanrl.query.sql import run_query

__all__ = ["connect", "run_query"]
