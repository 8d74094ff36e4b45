"""Tests of the installed verl-score wheel: run them with the Python of a
virtual environment that installed it (scripts/test-wheel.sh does), not
against the source tree.

VERL_SCORE_REPO is the repository (for testdata/), VERL_SCORE_DIST the
directory of the built wheels and archives.
"""

import asyncio
import concurrent.futures
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import unittest
import zipfile

import verl_score

REPO = os.environ["VERL_SCORE_REPO"]
DIST = os.environ.get("VERL_SCORE_DIST", os.path.join(REPO, "dist"))
EXAMPLE = os.path.join(REPO, "testdata", "example.jsonl")

# ELF e_machine values.
EM_X86_64 = 62
EM_AARCH64 = 183


def elf_machine(head: bytes) -> int:
    if head[:4] != b"\x7fELF":
        raise AssertionError("not an ELF file")
    if head[5] != 1:
        raise AssertionError("not little-endian")
    return struct.unpack_from("<H", head, 18)[0]


def example_rows():
    with open(EXAMPLE, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class InstalledWheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="verl-score-wheel-test-")
        # The module and the command must come from the installed wheel.
        src = os.path.join(REPO, "python")
        if os.path.abspath(verl_score.__file__).startswith(os.path.abspath(src) + os.sep):
            raise AssertionError(f"verl_score was imported from the source tree ({verl_score.__file__}), not the wheel")
        cls.command = os.path.join(os.path.dirname(sys.executable), "verl-score")
        if not os.access(cls.command, os.X_OK):
            raise AssertionError(f"the wheel installed no console script at {cls.command}")

    @classmethod
    def tearDownClass(cls):
        verl_score.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        verl_score.configure()  # back to the defaults for the next test

    def test_version_matches_the_wheel(self):
        out = subprocess.run([self.command, "--version"], capture_output=True, text=True, check=True).stdout
        self.assertTrue(out.startswith(f"verl-score {verl_score.__version__} "), out)
        self.assertEqual(verl_score.find_binary(), self.command)

    def test_compute_score_on_a_repository_task(self):
        # The Go tests (cmd's TestWorkerScoresSWERows) leave the calc
        # fixture's instance and images here; .ci/run runs them first.
        path = os.environ.get("VERL_SCORE_TEST_SWE_FIXTURE", "/var/tmp/verl-score-test/swe-fixture.json")
        if not os.path.exists(path) or os.geteuid() != 0:
            msg = f"SKIPPED LOUDLY: no SWE fixture at {path} (run go test ./cmd -run WorkerScoresSWE as root first)"
            if os.environ.get("CI") == "true":
                self.fail(msg)
            self.skipTest(msg)
        with open(path, encoding="utf-8") as f:
            fx = json.load(f)
        verl_score.configure(images=fx["images"], image_store=fx["image_store"])
        gold = verl_score.score_details("swe-fixture", "```diff\n" + fx["gold"] + "```", fx["ground_truth"])
        self.assertEqual(gold.score, 1.0, gold)
        self.assertEqual(gold.swe["outcome"], "resolved", gold.swe)
        self.assertEqual((gold.swe["f2p_passed"], gold.swe["p2p_passed"]), (1, 1), gold.swe)
        none = verl_score.compute_score("swe-fixture", "I could not find it.", fx["ground_truth"])
        self.assertEqual(none["score"], 0.0, none)
        self.assertEqual(none["cases"], 2, none)

    def test_compute_score_gives_runs_rewards(self):
        out = os.path.join(self.tmp, "example.scored.jsonl")
        proc = subprocess.run([self.command, "run", EXAMPLE, "-o", out, "--quiet"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out, encoding="utf-8") as f:
            scored = [json.loads(line) for line in f]
        calls, want = [], []
        for row in scored:
            gt = row["reward_model"]["ground_truth"]
            for resp, reward in zip(row["responses"], row["reward"]):
                calls.append((row["data_source"], resp, gt, row.get("extra_info")))
                want.append(reward)
        self.assertEqual(len(calls), 38)

        # One call at a time from several threads, as a reward manager's
        # thread pool would.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda c: verl_score.compute_score(*c), calls))
        self.assertEqual([g["score"] for g in got], want)
        for g in got:
            self.assertEqual(g["cases"], sum(g[k] for k in ("passed", "wrong_answer", "runtime_error", "timeout", "compile_error", "api_error")))
            self.assertEqual(set(g), set(got[0]), "every call must have the same keys")

        batch = verl_score.compute_score_batch(*zip(*calls), return_dict=False)
        self.assertEqual(batch, want)

        # Details: the verdicts are run's case_results.
        row = scored[0]
        d = verl_score.score_details(row["data_source"], row["responses"][0], row["reward_model"]["ground_truth"])
        want_verdicts = [1 if v is True else 0 if v is False else v for v in row["case_results"][0]]
        self.assertEqual(d.verdicts, want_verdicts)
        self.assertEqual(d.statuses, row["case_status"][0])

    def test_compute_score_async_many_at_once_on_one_worker(self):
        # what verl's reward loop does with a coroutine function: await it,
        # many at once on one event loop
        self.assertTrue(inspect.iscoroutinefunction(verl_score.compute_score_async))
        out = os.path.join(self.tmp, "example.async.jsonl")
        proc = subprocess.run([self.command, "run", EXAMPLE, "-o", out, "--quiet"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out, encoding="utf-8") as f:
            scored = [json.loads(line) for line in f]
        calls, want = [], []
        for row in scored:
            for resp, reward in zip(row["responses"], row["reward"]):
                calls.append((row["data_source"], resp, row["reward_model"]["ground_truth"], row.get("extra_info")))
                want.append(reward)
        calls, want = (calls * 7)[:256], (want * 7)[:256]
        verl_score.compute_score(*calls[0])  # the worker started
        worker = verl_score._worker.proc.pid
        threads = threading.active_count()
        peak = [threads]

        async def all_at_once():
            async def one(c):
                r = await verl_score.compute_score_async(*c, reward_router_address=None, reward_model_tokenizer=None)
                peak[0] = max(peak[0], threading.active_count())
                return r
            return await asyncio.gather(*(one(c) for c in calls))

        got = asyncio.run(all_at_once())
        self.assertEqual([g["score"] for g in got], want)
        self.assertEqual(verl_score._worker.proc.pid, worker, "one worker served them")
        self.assertLessEqual(peak[0], threads + 2, "a thread per call")
        floats = asyncio.run(verl_score.compute_score_async(*calls[1], return_dict=False))
        self.assertEqual(floats, want[1])

    def test_the_readmes_verl_lines(self):
        # README's two lines: the path the shell computes, and each name it
        # gives, loaded as verl loads a custom reward function (a module
        # made from the file's path with importlib, then the name from it)
        path = subprocess.run([sys.executable, "-c", "import verl_score; print(verl_score.__file__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
        self.assertTrue(os.path.isfile(path), path)
        spec = importlib.util.spec_from_file_location("custom_module", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        try:
            spec.loader.exec_module(module)
        finally:
            sys.modules.pop("custom_module", None)
        row = example_rows()[0]
        gt = row["reward_model"]["ground_truth"]
        want = verl_score.compute_score(row["data_source"], row["responses"][0], gt)["score"]
        self.assertEqual(module.compute_score(row["data_source"], row["responses"][0], gt)["score"], want)
        self.assertTrue(inspect.iscoroutinefunction(module.compute_score_async))
        self.assertEqual(asyncio.run(module.compute_score_async(row["data_source"], row["responses"][0], gt))["score"],
                         want)
        self.assertEqual(module.compute_score_batch([row["data_source"]], [row["responses"][0]], [gt],
                                                    return_dict=False), [want])
        module.close()

    def test_reward_error_is_a_zero_not_an_exception(self):
        r = verl_score.score_details("taco", "no code block here", json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}))
        self.assertEqual(r.score, 0.0)
        self.assertEqual(r.error, "Invalid completion (missing code block)")
        self.assertEqual(verl_score.compute_score("taco", "```python\nprint(input())\n```", {"inputs": ["1\n"], "outputs": ["1\n"]}, return_dict=False), 1.0)

    def test_score_file_returns_the_summary(self):
        out = os.path.join(self.tmp, "summary-run.jsonl")
        summary = verl_score.score_file(EXAMPLE, output=out, no_dedup=True)
        self.assertEqual(summary["overall"]["responses"], 38)
        self.assertEqual(summary["overall"]["requests"], 113)  # no_dedup reached the command
        self.assertTrue(os.path.exists(out))

    def test_errors_carry_the_commands_message(self):
        with self.assertRaises(verl_score.VerlScoreError) as e:
            verl_score.score_file(os.path.join(self.tmp, "missing.parquet"))
        self.assertIn("missing.parquet", str(e.exception))
        self.assertEqual(e.exception.exit_code, 1)

        verl_score.configure(timeout=-1)
        with self.assertRaises(verl_score.VerlScoreError) as e:
            verl_score.compute_score("taco", "```python\nprint(1)\n```", "{}")
        self.assertIn("timeout must be positive", str(e.exception))

        verl_score.configure()
        with self.assertWarns(UserWarning) as w:
            r = verl_score.compute_score("taco", "x", "{}", no_such_option=1)
        self.assertIn("no_such_option", str(w.warning))
        self.assertEqual(r["score"], 0.0)

    def test_a_forked_child_has_its_own_worker(self):
        verl_score.compute_score("taco", "```python\nprint(1)\n```", {"inputs": ["\n"], "outputs": ["1\n"]})
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                s = verl_score.compute_score("taco", "```python\nprint(2)\n```", {"inputs": ["\n"], "outputs": ["2\n"]}, return_dict=False)
                os.write(w, str(s).encode())
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 64)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"1.0")
        self.assertEqual(verl_score.compute_score("taco", "```python\nprint(3)\n```", {"inputs": ["\n"], "outputs": ["3\n"]}, return_dict=False), 1.0)


class ReleaseFiles(unittest.TestCase):
    def wheel(self, machine):
        names = [n for n in os.listdir(DIST) if n.startswith("verl_score-") and n.endswith(f"_{machine}.whl") and "manylinux" in n]
        self.assertEqual(len(names), 1, f"one manylinux {machine} wheel in {DIST}: {names}")
        return os.path.join(DIST, names[0])

    def binary_head(self, wheel):
        with zipfile.ZipFile(wheel) as z:
            scripts = [n for n in z.namelist() if n.endswith(".data/scripts/verl-score")]
            self.assertEqual(len(scripts), 1)
            info = z.getinfo(scripts[0])
            self.assertTrue((info.external_attr >> 16) & 0o111, "the binary must be executable")
            with z.open(info) as f:
                return f.read(64)

    def test_each_wheel_carries_its_platforms_binary(self):
        self.assertEqual(elf_machine(self.binary_head(self.wheel("x86_64"))), EM_X86_64)
        self.assertEqual(elf_machine(self.binary_head(self.wheel("aarch64"))), EM_AARCH64)

    def test_archives_and_sums(self):
        version = verl_score.__version__
        for arch, machine in (("amd64", EM_X86_64), ("arm64", EM_AARCH64)):
            path = os.path.join(DIST, f"verl-score-{version}-linux-{arch}.tar.gz")
            with tarfile.open(path) as t:
                names = set(t.getnames())
                base = f"verl-score-{version}-linux-{arch}"
                self.assertTrue({f"{base}/verl-score", f"{base}/README.md", f"{base}/LICENSE"} <= names, names)
                self.assertEqual(elf_machine(t.extractfile(f"{base}/verl-score").read(64)), machine)
        with open(os.path.join(DIST, "SHA256SUMS"), encoding="utf-8") as f:
            sums = dict(reversed(line.split()) for line in f if line.strip())
        listed = {n for n in os.listdir(DIST) if n.endswith((".whl", ".tar.gz"))}
        self.assertEqual(set(sums), listed)
        for name, digest in sums.items():
            with open(os.path.join(DIST, name), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, name)


if __name__ == "__main__":
    unittest.main()
