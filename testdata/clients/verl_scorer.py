"""Scores rows with verl's own scorer (the verl package's
verl.utils.reward_score: default_compute_score, and the sandbox_fusion
scorer it routes code to) against a verl-score serve endpoint, and prints
one JSON line per response: the reward and verl's metadata of each case.

verl's package __init__ imports torch and ray (verl.protocol), which a
CPU machine without them cannot; the reward_score modules need neither
(requests only). So verl, verl.utils and verl.utils.reward_score are
registered as bare packages over the installed files: verl's __init__
files are skipped, and none of its code is replaced.

usage: verl_scorer.py ROWS.jsonl SANDBOX_FUSION_URL
"""
import importlib
import importlib.metadata
import json
import os
import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor

rows_path, url = sys.argv[1:3]
root = os.path.dirname(str(importlib.metadata.distribution("verl").locate_file("verl/__init__.py")))
for name, sub in [("verl", ""), ("verl.utils", "utils"), ("verl.utils.reward_score", "utils/reward_score")]:
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(root, sub)]
    sys.modules[name] = pkg
spec = importlib.util.spec_from_file_location("verl.utils.reward_score",
                                              os.path.join(root, "utils/reward_score/__init__.py"),
                                              submodule_search_locations=[os.path.join(root, "utils/reward_score")])
reward_score = importlib.util.module_from_spec(spec)
sys.modules["verl.utils.reward_score"] = reward_score
try:
    spec.loader.exec_module(reward_score)
    default_compute_score = reward_score.default_compute_score
except Exception as e:  # its __init__ may import what is not here; the router is then left out
    print(f"verl's default_compute_score is not importable here: {e}", file=sys.stderr)
    default_compute_score = None
sandbox_fusion = importlib.import_module("verl.utils.reward_score.sandbox_fusion")

ROUTED = {"codecontests", "apps", "codeforces", "taco"}  # what verl's default sends to the sandbox scorer
sem = threading.Semaphore(32)


def score(job):
    i, j, ds, resp, gt, extra = job
    # the metadata of every case, from verl's sandbox scorer
    continuous = ds in ROUTED
    s, meta = sandbox_fusion.compute_score(url, sem, 1024, resp, gt, continuous=continuous, timeout=10)
    routed = None
    if continuous and default_compute_score is not None:
        routed = default_compute_score(ds, resp, gt, extra, sandbox_fusion_url=url, concurrent_semaphore=sem,
                                       memory_limit_mb=1024)
    return {"row": i, "response": j, "data_source": ds, "score": s, "default_compute_score": routed,
            "meta": meta}


jobs = []
for i, line in enumerate(open(rows_path)):
    row = json.loads(line)
    gt = row["reward_model"]["ground_truth"]
    for j, resp in enumerate(row["responses"]):
        jobs.append((i, j, row["data_source"], resp, gt, row.get("extra_info")))
with ThreadPoolExecutor(8) as pool:
    for out in pool.map(score, jobs):
        print(json.dumps(out, default=str))
