"""bench/serve: dynamic batching in ``spanrl serve`` - N parallel requests vs the same N one by one.

The server runs in this process (port 0). Each round sends the same N requests (temperature 1,
seed i, ``max_tokens`` fixed, so both modes generate the same tokens) first sequentially, then all
at once from N threads; rounds alternate so a noisy shared machine hits both modes alike. Prints the
median wall time per mode, completion tokens/s, the speed-up (sequential / parallel), the batch sizes
the server reports at /health, and how many outputs were token-identical across the two modes.

    .venv/bin/python bench/serve.py                       # tiny model, then SmolLM2-135M (demo model)
    .venv/bin/python bench/serve.py --models tiny --n 8 --rounds 5
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
        from spanrl.trainer.models import prepare_demo_model

        return prepare_demo_model(Path(tempfile.gettempdir()) / "spanrl-bench-data")
    return Path(name)


def _one(http: httpx.Client, url: str, i: int, max_tokens: int) -> list[int]:
    body = {"model": "default", "messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
            "temperature": 1.0, "seed": i, "max_tokens": max_tokens, "return_token_ids": True}
    r = http.post(url + "/v1/chat/completions", json=body)
    r.raise_for_status()
    return r.json()["choices"][0]["token_ids"]


def bench_model(name: str, n: int, rounds: int, max_tokens: int, work: Path, threads: int | None) -> dict[str, float]:
    from spanrl.trainer.serve import ServeConfig, serve_in_background

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["tiny", "demo"], help="tiny, demo, or a model folder")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads in the server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            bench_model(name, args.n, args.rounds, args.max_tokens, Path(tmp), args.threads)


if __name__ == "__main__":
    main()
