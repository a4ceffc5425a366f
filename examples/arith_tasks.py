"""Write the calculator demo's word problems as ``spanrl rollout`` tasks (``{"task_id", "input",
"expected"}``), for the framework examples: ``python examples/arith_tasks.py eval 32 > heldout.jsonl``,
``python examples/arith_tasks.py train 64 --seed 0 > train.jsonl``. Same splits as the demo
(``examples/calc_agent/tasks.py``): held-out and validation lists are fixed, train is fresh per seed."""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "calc_agent"))
from tasks import make_tasks  # noqa: E402 - the demo's generator, beside this file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("split", choices=["train", "val", "eval"])
    parser.add_argument("n", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for t in make_tasks(args.split, args.n, args.seed):
        print(json.dumps({"task_id": t["task_id"], "input": t["question"], "expected": str(t["answer"])}))


if __name__ == "__main__":
    main()
