"""Judge stage: rewards from an LLM judge, relative within each task group (``spanrl judge``).

Reads trajectories from a transition snapshot; its scores leave as feedback files in
``DATA/feedback/``, which stage 2 reads like any other feedback. No other stage imports it.
"""

from spanrl.judge.config import JudgeConfig
from spanrl.judge.runner import JudgeReport, run_judge

__all__ = ["JudgeConfig", "JudgeReport", "run_judge"]
