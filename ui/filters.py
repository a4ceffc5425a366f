"""The Rollouts page's state as a query string: parsed, checked, turned into SQL parameters and back.

Every page keeps its whole state in the URL (filters, sort, page), so a link can be shared and the
back button works; this module is that URL's one definition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from spanrl.errors import InputError

PER_PAGE = 50
# sort key in the URL -> ORDER BY expression (the only text pasted into rollouts_page.sql)
SORTS = {
    "time": "started_ns",
    "reward": "final_reward",
    "task": "task_id",
    "calls": "n_llm_calls",
    "errors": "n_errors",
    "air": "air_hits",
    "duration": "ended_ns - started_ns",
}
TIME_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")


@dataclass
class RolloutFilter:
    """What the Rollouts table shows; empty strings mean "any"."""

    task: str = ""
    agent: str = ""
    reward_min: str = ""
    reward_max: str = ""
    air: str = ""  # "" | "yes" | "no"
    errors: str = ""  # "" | "yes" | "no": rollouts with (without) an error span
    since: str = ""  # UTC, 2026-01-01T10:00
    until: str = ""
    snapshot: str = ""
    cycle: str = ""
    q: str = ""  # free text over messages
    sort: str = "time"
    dir: str = "desc"
    page: int = 1

    @classmethod
    def from_query(cls, query: Any) -> RolloutFilter:
        """From the request's query string; InputError names the bad field."""
        values = {f.name: str(query.get(f.name, "")).strip() for f in fields(cls)}
        try:
            values["page"] = max(1, int(values["page"] or 1))
        except ValueError:
            raise InputError(f"page={values['page']!r} is not a page number") from None
        flt = cls(**values)
        flt.sort = flt.sort if flt.sort in SORTS else "time"
        flt.dir = "asc" if flt.dir == "asc" else "desc"
        for name in ("air", "errors"):
            if getattr(flt, name) not in ("", "yes", "no"):
                raise InputError(f"{name}={getattr(flt, name)!r}: use yes, no or leave it empty")
        for name in ("reward_min", "reward_max"):
            _number(name, getattr(flt, name))
        for name in ("since", "until"):
            _time_ns(name, getattr(flt, name))
        if flt.cycle and not flt.cycle.isdigit():
            raise InputError(f"cycle={flt.cycle!r} is not a cycle number")
        return flt

    def params(self) -> dict[str, Any]:
        """Bound parameters of rollouts_page.sql (snapshot/search come as registered relations)."""
        return {
            "task": self.task or None, "agent": self.agent or None,
            "reward_min": _number("reward_min", self.reward_min), "reward_max": _number("reward_max", self.reward_max),
            "air": None if not self.air else self.air == "yes",
            "errors": None if not self.errors else self.errors == "yes",
            "since_ns": _time_ns("since", self.since), "until_ns": _time_ns("until", self.until),
            "limit": PER_PAGE, "offset": (self.page - 1) * PER_PAGE,
        }

    def order(self) -> str:
        nulls = "NULLS LAST"
        return f"{SORTS[self.sort]} {'ASC' if self.dir == 'asc' else 'DESC'} {nulls}"

    def url(self, **changes: Any) -> str:
        """``/rollouts?...`` with ``changes`` applied (a new filter or sort goes back to page 1)."""
        state = {**asdict(self), **changes}
        if set(changes) - {"page"}:
            state["page"] = changes.get("page", 1)
        keep = {k: v for k, v in state.items()
                if v not in ("", None) and not (k == "page" and v == 1) and not (k == "sort" and v == "time")
                and not (k == "dir" and v == "desc")}
        return "/rollouts" + ("?" + urlencode(keep) if keep else "")

    def structured(self) -> bool:
        """Whether any filter other than free text is set (for the page's summary line)."""
        return any((self.task, self.agent, self.reward_min, self.reward_max, self.air, self.errors, self.since, self.until,
                    self.snapshot, self.cycle))


def _number(name: str, text: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{name}={text!r} is not a number") from None


def _time_ns(name: str, text: str) -> int | None:
    if not text:
        return None
    for fmt in TIME_FORMATS:
        try:
            return int(datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp() * 1e9)
        except ValueError:
            continue
    raise InputError(f"{name}={text!r}: write the time as 2026-01-31T14:00 (UTC)")


def format_ns(ns: int | None) -> str:
    """A lake timestamp (ns since the epoch) as UTC text."""
    if ns is None:
        return ""
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S")
