"""Drives verl-score serve with SandboxFusion's own client (the
sandbox-fusion package): run_code and run_jupyter through its functions
and types, sync and async, summary_run_code_result, and its error paths: a
503 from a full server raised by the client, and the client's own timeout.

usage: sandbox_fusion_client.py URL FULL_URL
URL is a serve endpoint; FULL_URL one with --slots 1 --max-queue 0, to be
filled. Prints one JSON line of figures; exits 1 naming every problem.
"""
import asyncio
import json
import sys
import threading

import sandbox_fusion as sf
from sandbox_fusion import RunCodeRequest, RunJupyterRequest, RunStatus

url, full_url = sys.argv[1:3]
problems = []


def check(ok, msg):
    if not ok:
        problems.append(msg)


sf.set_endpoint(url)
calls = 0

# run_code: a program that prints, with stdin
r = sf.run_code(RunCodeRequest(code="print(int(input()) + 1)", stdin="41", language="python"))
calls += 1
check(r.status == RunStatus.Success and r.run_result.stdout == "42\n" and r.run_result.return_code == 0,
      f"python with stdin: {r}")
check(sf.summary_run_code_result(r, sf.SummaryMapping()) == RunStatus.Success, "summary of a success")

# a wrong program, a compile error, a timeout: results, not exceptions
r = sf.run_code(RunCodeRequest(code="import sys; sys.exit(3)", language="python"))
calls += 1
check(r.status == RunStatus.Failed and r.run_result.return_code == 3, f"exit 3: {r}")
r = sf.run_code(RunCodeRequest(code="int main( { return 0; }", language="cpp"))
calls += 1
check(r.status == RunStatus.Failed and r.compile_result is not None and r.compile_result.return_code != 0,
      f"a compile error: {r}")
r = sf.run_code(RunCodeRequest(code="while True: pass", language="python", run_timeout=1))
calls += 1
check(r.status == RunStatus.Failed and str(r.run_result.status).endswith("TimeLimitExceeded"), f"a timeout: {r}")

# files in and out
r = sf.run_code(RunCodeRequest(code="open('out.txt', 'w').write(open('in.txt').read().upper())", language="python",
                               files={"in.txt": "aGVsbG8="}, fetch_files=["out.txt"]))
calls += 1
check(r.status == RunStatus.Success and r.files.get("out.txt") == "SEVMTE8=", f"files: {r}")

# run_jupyter: state across cells, an error in a cell
j = sf.run_jupyter(RunJupyterRequest(cells=["a = 20", "print(a + 22)", "raise RuntimeError('boom')"]))
calls += 1
check(j.status == RunStatus.Success or j.status == RunStatus.Failed, f"jupyter status {j.status}")
check(len(j.cells) == 3 and j.cells[1].stdout == "42\n", f"jupyter cells: {j.cells}")
check(any("boom" in str(e.get("evalue", "")) for e in j.cells[2].error), f"jupyter's error cell: {j.cells[2]}")


# the async client, many at once
async def many(n):
    reqs = [sf.run_code_async(RunCodeRequest(code=f"print({i} * {i})", language="python")) for i in range(n)]
    return await asyncio.gather(*reqs)


rs = asyncio.run(many(16))
calls += 16
check([x.run_result.stdout for x in rs] == [f"{i * i}\n" for i in range(16)], "async answers")

# a 503: the full server's slot taken by a long run, the next request is
# turned away, and the client raises it (one attempt, no retries)
hold = threading.Thread(target=lambda: sf.run_code(
    RunCodeRequest(code="import time; time.sleep(4)", language="python"), endpoint=full_url, max_attempts=1))
hold.start()
import time
time.sleep(1.0)
try:
    sf.run_code(RunCodeRequest(code="print(1)", language="python"), endpoint=full_url, max_attempts=1)
    problems.append("a full server's request did not raise")
except Exception as e:
    check("503" in str(e), f"a full server: {e}")
hold.join()
calls += 2

# the client's own timeout, shorter than the run
try:
    sf.run_code(RunCodeRequest(code="import time; time.sleep(3)", language="python"), max_attempts=1,
                client_timeout=0.5)
    problems.append("a request past the client's timeout did not raise")
except Exception as e:
    check("timed out" in str(e).lower() or "timeout" in type(e).__name__.lower() or "Timeout" in str(e),
          f"the client's timeout: {type(e).__name__}: {e}")
calls += 1

print(json.dumps({"calls": calls, "sandbox_fusion": getattr(sf, "__version__", "0.3.7")}))
if problems:
    for p in problems:
        print("problem:", p, file=sys.stderr)
    sys.exit(1)
