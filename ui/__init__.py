"""The trajectory browser (``spanrl ui``): a read-only web app over the data root.

Rollouts, one rollout's span tree, LLM calls, rewards, AIR hits and advantages, tasks, snapshots,
training cycles and a SQL box, all read through the guarded query connection (``spanrl.query``),
the snapshot reader (``spanrl.transitions``) and the cycle log (``spanrl.trainer.adapter``).
"""

from spanrl.ui.app import make_app
from spanrl.ui.data import Lake

__all__ = ["Lake", "make_app"]
