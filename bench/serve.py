"""bench/serve: dynamic batching in ``spanrl serve`` - N parallel requests vs the same N one by one.

The server runs in this process (port 0). Each round sends the same N requests (temperature 1,
seed i, ``max_tokens`` fixed, so both modes generate the same tokens) first sequentially, then all
at once from N threads; rounds alternate so a noisy shared machine hits both modes alike. Prints the
median wall time per mode, completion tokens/s, the speed-up (sequential / parallel), the batch sizes
the server reports at /health, and how many outputs were token-identical across the two modes.

    .venv/bin/python bench/serve.py                       # tiny model, then SmolLM2-135M (demo model)
    .venv/bin/python bench/serve.py --models tiny --n 8 --rounds 5
    .venv/bin/python bench/serve.py --models tiny demo --agents 8 --turns 4 --threads 1   # static vs continuous
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPTS = [
    "What is the capital of France?", "Write a haiku about the sea.", "Give me three tips for sleeping well.",
    "Explain what a prime number is.", "Name two planets and one fact about each.", "How do I boil an egg?",
    "Translate 'good morning' into Spanish.", "What is 12 times 7?",
]


def _model(name: str, work: Path) -> Path:
    if name == "tiny":
        from tests.helpers.tiny_model import make_tiny_model

        return make_tiny_model(work / "tiny-chat")
    if name == "demo":
        from spanrl.serve.models import prepare_demo_model

        return prepare_demo_model(Path(tempfile.gettempdir()) / "spanrl-bench-data")
    return Path(name)


def _one(http: httpx.Client, url: str, i: int, max_tokens: int) -> list[int]:
    body = {"model": "default", "messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
            "temperature": 1.0, "seed": i, "max_tokens": max_tokens, "return_token_ids": True}
    r = http.post(url + "/v1/chat/completions", json=body)
    r.raise_for_status()
    return r.json()["choices"][0]["token_ids"]


def bench_model(name: str, n: int, rounds: int, max_tokens: int, work: Path, threads: int | None) -> dict[str, float]:
    from spanrl.serve.server import ServeConfig, serve_in_background

    path = _model(name, work)
    running = serve_in_background(ServeConfig(model=path, data=work / "data", port=0, max_batch=n,
                                              batch_wait_ms=50, max_tokens=max_tokens, device="auto",
                                              threads=threads))
    seq_times, par_times, same, total_tokens = [], [], 0, 0
    try:
        with httpx.Client(timeout=600) as http, ThreadPoolExecutor(n) as pool:
            _one(http, running.url, 0, 4)  # warm-up
            for _ in range(rounds):
                t0 = time.perf_counter()
                seq = [_one(http, running.url, i, max_tokens) for i in range(n)]
                seq_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                par = list(pool.map(lambda i: _one(http, running.url, i, max_tokens), range(n)))
                par_times.append(time.perf_counter() - t0)
                same += sum(a == b for a, b in zip(seq, par, strict=True))
                total_tokens = sum(len(x) for x in par)
            health = http.get(running.url + "/health").json()
    finally:
        running.stop()
    s, p = statistics.median(seq_times), statistics.median(par_times)
    print(f"{name}: N={n} max_tokens={max_tokens} rounds={rounds} device={health['device']} threads={threads or 'default'}")
    print(f"  sequential {s:.2f}s ({total_tokens / s:.0f} tok/s)  parallel {p:.2f}s ({total_tokens / p:.0f} tok/s)"
          f"  speed-up x{s / p:.2f}")
    print(f"  batch sizes seen: {health['batch_sizes']}  identical outputs: {same}/{n * rounds}")
    return {"sequential_s": s, "parallel_s": p, "speedup": s / p}


def bench_agents(name: str, n: int, turns: int, work: Path, threads: int | None) -> None:
    """N 'agents' each making ``turns`` calls one after another, reply lengths varying (8..40 tokens):
    static batching (a batch runs until its longest row ends) vs continuous (waiting calls join it)."""
    from spanrl.serve.server import ServeConfig, serve_in_background

    path = _model(name, work)
    lengths = [[8 + (7 * a + 13 * t) % 33 for t in range(turns)] for a in range(n)]
    times = {}
    for continuous in (False, True, False, True):
        running = serve_in_background(ServeConfig(model=path, data=work / "data", port=0, max_batch=n, batch_wait_ms=20,
                                                  device="auto", threads=threads, continuous_batching=continuous))
        try:
            with httpx.Client(timeout=600) as http, ThreadPoolExecutor(n) as pool:
                _one(http, running.url, 0, 2)

                def agent(a: int, url: str = running.url) -> int:
                    return sum(len(_one(http, url, a * 100 + t, lengths[a][t])) for t in range(turns))

                t0 = time.perf_counter()
                tokens = sum(pool.map(agent, range(n)))
                times.setdefault(continuous, []).append(time.perf_counter() - t0)
                health = http.get(running.url + "/health").json()
        finally:
            running.stop()
        print(f"  {'continuous' if continuous else 'static    '}: {times[continuous][-1]:.2f}s {tokens} tokens, "
              f"generate calls {health['generate_calls']}, admitted rows {health['admitted_rows']}")
    static, cont = min(times[False]), min(times[True])
    print(f"{name}: {n} agents x {turns} turns: static {static:.2f}s, continuous {cont:.2f}s, x{static / cont:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["tiny", "demo"], help="tiny, demo, or a model folder")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads in the server")
    parser.add_argument("--agents", type=int, default=0, help="instead: N agents x --turns calls, static vs continuous")
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            if args.agents:
                bench_agents(name, args.agents, args.turns, Path(tmp), args.threads)
                continue
            bench_model(name, args.n, args.rounds, args.max_tokens, Path(tmp), args.threads)


if __name__ == "__main__":
    main()
