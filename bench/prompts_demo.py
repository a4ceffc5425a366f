"""The demo's calculator agent, its system prompt optimized by ``spanrl prompts optimize`` (docs/prompts.md):
per seed, its own data root; the unmodified agent (examples/calc_agent) run through ``spanrl gateway`` in
front of ``spanrl serve`` (SmolLM2-135M, the demo's model) on a pool of training tasks, ingested; then the
optimizer on other training tasks (demonstrations come from the pool's best rollouts; with
``--optimizer-url`` also APO rewrites); then ``spanrl eval`` of the original prompt and LATEST on the demo's 64
held-out tasks through ``spanrl gateway --prompts`` pinned URLs. Resumable: each finished seed is one line of
``bench/results/prompts_demo.jsonl`` (a seed already there is skipped) and a seed cut short resumes its runs
(fixed ports, so the run ids repeat); prints a markdown table at the end.

    .venv/bin/python bench/prompts_demo.py --data /tmp/prompts-demo --seeds 0 1 2     # hours on 2 CPU cores

Not run in the default test suite (``make prompts-demo``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "examples" / "calc_agent"
SCORE = (f"{sys.executable} -c \"import json,sys; d=json.load(sys.stdin); "
         f"print(json.loads(d['output'].strip().splitlines()[-1])['reward'])\"")
SPANRL = [sys.executable, "-m", "spanrl"]


def started(cmd: list[str], log: Path, pattern: str, timeout_s: float = 900.0) -> tuple[subprocess.Popen, str]:
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if match := re.search(pattern, log.read_text(errors="replace")):
            return proc, match.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"{' '.join(cmd[2:4])} did not start; see {log}")


def run(cmd: list[str]) -> None:
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def tasks_file(path: Path, split: str, n: int, seed: int) -> Path:
    sys.path.insert(0, str(AGENT))
    from tasks import make_tasks  # examples/calc_agent/tasks.py

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**t, "input": t["question"], "expected": t["answer"]}) + "\n"
                            for t in make_tasks(split, n, seed)))
    return path


def agent(tasks: Path) -> list[str]:
    return [sys.executable, str(AGENT / "agent.py"), "--tasks", str(tasks), "--task-id", "{task_id}", "--agent-name",
            "calc", "--temperature", "0.7", "--max-tokens", "48"]


def one_seed(args: argparse.Namespace, seed: int) -> dict:
    started_at = time.monotonic()
    data = Path(args.data) / f"seed-{seed}"
    data.mkdir(parents=True, exist_ok=True)  # a seed cut short resumes: fixed ports keep every run id the same,
    # so `spanrl rollout` / `spanrl eval` skip finished samples and the optimizer reuses its scored candidates
    port = args.port_base + 10 * seed
    pool = tasks_file(data / "tasks" / "pool.jsonl", "train", args.pool, 100 + seed)
    train = tasks_file(data / "tasks" / "train.jsonl", "train", args.train, seed)
    heldout = tasks_file(data / "tasks" / "eval.jsonl", "eval", args.heldout, 0)
    model = args.model or str(data.parent / "models" / "smollm2-135m-instruct")
    if not args.model:
        from spanrl.serve.models import prepare_demo_model

        model = str(prepare_demo_model(data.parent))
    serve, upstream = started([*SPANRL, "serve", "--model", model, "--data", str(data), "--port", str(port),
                               "--served-model-name", "default"], data / "logs" / "serve.log", r"on (http://\S+/v1)")
    try:
        gw, root = started([*SPANRL, "gateway", "--data", str(data), "--upstream", upstream, "--port",
                            str(port + 1)], data / "logs" / "gateway.log", r"spanrl gateway: (http://\S+)/v1")
        try:
            run([*SPANRL, "rollout", "--data", str(data), "--tasks", str(pool), "--n", str(args.n), "--policy-url",
                 root + "/v1", "--concurrency", str(args.concurrency), "--score", SCORE, "--timeout", "600s", "--", *agent(pool)])
        finally:
            gw.terminate()
            gw.wait(60)
        run([*SPANRL, "ingest", "--data", str(data), "--settle", "0s"])
        extra = (["--optimizer-url", args.optimizer_url, "--optimizer-model", args.optimizer_model]
                 if args.optimizer_url else [])
        run([*SPANRL, "prompts", "optimize", "--data", str(data), "--agent", "calc", "--tasks", str(train), "--upstream",
             upstream, "--score", SCORE, "--budget-rollouts", str(args.budget), "--n", str(args.n), "--seed", str(seed),
             "--val-fraction", str(args.val_fraction), "--demos", str(args.demos), "--demo-sets", str(args.demo_sets), "--demo-form", args.demo_form,
             "--concurrency", str(args.concurrency), "--timeout", "600s", *extra, "--", *agent(train)])
        from spanrl.prompts.store import latest_version, read_version

        latest = latest_version(data, "calc") or "0001"
        gw, root = started([*SPANRL, "gateway", "--prompts", "--data", str(data), "--upstream", upstream,
                            "--port", str(port + 2)], data / "logs" / "gateway-prompts.log", r"spanrl gateway: (http://\S+)/v1")
        try:
            policies = ["--policy", f"original={root}/p/calc/0001/v1"]
            if latest != "0001":
                policies += ["--policy", f"latest={root}/p/calc/{latest}/v1"]
            run([*SPANRL, "eval", "--data", str(data), "--tasks", str(heldout), "--n", str(args.heldout_n or args.n), *policies,
                 "--concurrency", str(args.concurrency), "--score", SCORE, "--timeout", "600s", "--out", str(data / "eval-prompts"), "--", *agent(heldout)])
        finally:
            gw.terminate()
            gw.wait(60)
    finally:
        serve.terminate()
        serve.wait(60)
    doc = json.loads((data / "eval-prompts" / "eval.json").read_text())
    cmp = (doc["comparisons"] or [{}])[0]
    report = json.loads((data / "prompts" / "calc" / "_optimize" / "report.json").read_text())
    return {"seed": seed, "heldout_tasks": args.heldout, "n": args.n, "heldout_n": args.heldout_n or args.n, "budget": args.budget, "pool": args.pool,
            "train_tasks": args.train, "val_fraction": round(args.val_fraction, 3), "demos": args.demos,
            "demo_sets": args.demo_sets, "demo_form": args.demo_form, "optimize_verdict": report.get("verdict"),
            "optimize_validation": (report.get("validation") or {}).get("comparison"),
            "used_rollouts": report.get("used_rollouts"),
            "seconds": round(time.monotonic() - started_at, 1), "latest": latest, "method": read_version(data, "calc", latest).meta.get("method"),
            "original": doc["policies"]["original"]["mean"], "promoted": doc["policies"].get("latest", {}).get("mean"),
            "diff": cmp.get("diff"), "ci": cmp.get("ci"), "verdict": cmp.get("verdict", "nothing promoted")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--model", default=None, help="base model folder (default: the demo's SmolLM2, prepared)")
    parser.add_argument("--pool", type=int, default=64, help="training tasks whose rollouts seed the lake")
    parser.add_argument("--train", type=int, default=80, help="tasks the optimizer scores on (train + validation)")
    parser.add_argument("--val-fraction", type=float, default=0.8,
                        help="their share for validation: 64 of 80 (32 of 48 on 2026-12-07, 8 of 16 before)")
    parser.add_argument("--demos", type=int, default=4, help="worked examples per demonstrations candidate")
    parser.add_argument("--demo-sets", type=int, default=2, help="sets of worked examples")
    parser.add_argument("--demo-form", default="both", choices=("text", "turns", "both"),
                        help="each set as text in the system prompt, as conversation turns, or a candidate of each")
    parser.add_argument("--port-base", type=int, default=18400,
                        help="seed S uses ports BASE+10S .. +2 (serve, gateway, gateway --prompts): fixed, so a rerun resumes")
    parser.add_argument("--heldout", type=int, default=64, help="held-out tasks (the demo's 64)")
    parser.add_argument("--n", type=int, default=2, help="samples per task: pool, optimizer, held-out")
    parser.add_argument("--heldout-n", type=int, default=None, help="samples per held-out task (default --n)")
    parser.add_argument("--budget", type=int, default=480)
    parser.add_argument("--concurrency", type=int, default=32,
                        help="agent processes at once in every phase: spanrl serve batches their requests, so more at "
                             "once is more done per second on CPU (the demo runs 64; the commands' default is 4-8)")
    parser.add_argument("--optimizer-url", default=None)
    parser.add_argument("--optimizer-model", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "prompts_demo_turns.jsonl"))
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["seed"]: json.loads(line) for line in out.read_text().splitlines()
            if line.strip()} if out.exists() else {}
    for seed in args.seeds:
        if seed in done:
            print(f"seed {seed}: already in {out}, skipped", flush=True)
            continue
        done[seed] = one_seed(args, seed)
        with out.open("a") as fh:
            fh.write(json.dumps(done[seed]) + "\n")
    rows = [done[s] for s in args.seeds]
    print("| seed | LATEST (method) | original | promoted | paired diff [95%] | verdict |\n| --- | --- | ---: | ---: | --- | --- |")
    for r in rows:
        ci = f"{r['diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]" if r["diff"] is not None else ""
        promoted = f"{r['promoted']:.3f}" if r["promoted"] is not None else "-"
        print(f"| {r['seed']} | {r['latest']} ({r['method']}) | {r['original']:.3f} | {promoted} | {ci} | {r['verdict']} |")


if __name__ == "__main__":
    main()
