#!/usr/bin/env python3
"""Benchmark: N compute_score calls through one long-lived worker against
one verl-score process per call, in the same run, one call at a time.

    VERL_SCORE_BINARY=./verl-score PYTHONPATH=python python3 python/bench_compute_score.py [N]

Each call scores a distinct small Python program (so nothing is shared)
against two stdin cases in the embedded sandbox (or SANDBOX_FUSION_URL's
servers). "Per call" starts `verl-score worker`, waits for it to be ready,
sends the one request and waits for it to exit: what a wrapper that runs
the command for each reward would pay.
"""

import json
import os
import subprocess
import sys
import time

import verl_score


def call(i):
    code = f"```python\nn = int(input())\nprint(n + {i})\n```"
    gt = json.dumps({"inputs": ["1\n", "2\n"], "outputs": [f"{1 + i}\n", f"{2 + i}\n"]})
    return "taco", code, gt


def per_process(binary, args):
    req = json.dumps({"id": 1, "data_source": args[0], "solution_str": args[1], "ground_truth": args[2]}) + "\n"
    out = subprocess.run([binary, "worker"], input=req.encode(), capture_output=True, check=True).stdout
    return json.loads(out.splitlines()[1])["score"]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    binary = verl_score.find_binary()
    verl_score.compute_score(*call(-1))  # start the worker outside the timing, as in training

    t = time.perf_counter()
    one = [verl_score.compute_score(*call(i), return_dict=False) for i in range(n)]
    one_s = time.perf_counter() - t

    t = time.perf_counter()
    each = [per_process(binary, call(n + i)) for i in range(n)]
    each_s = time.perf_counter() - t

    assert one == [1.0] * n and each == [1.0] * n, "every program is correct"
    print(f"{n} compute_score calls, one at a time ({os.cpu_count()} CPUs)")
    print(f"  one worker process:    {one_s:7.2f} s  {n / one_s:7.1f} calls/s  {1000 * one_s / n:6.1f} ms/call")
    print(f"  one process per call:  {each_s:7.2f} s  {n / each_s:7.1f} calls/s  {1000 * each_s / n:6.1f} ms/call")
    print(f"  ratio: {each_s / one_s:.1f}x")


if __name__ == "__main__":
    main()
