"""verl-score from Python: verl's code reward through one long-lived process.

In verl's configuration::

    custom_reward_function.path=<site-packages>/verl_score/__init__.py
    custom_reward_function.name=compute_score

(``python -c "import verl_score; print(verl_score.__file__)"`` prints the
path.) With ``reward_model.reward_manager=batch`` use
``name=compute_score_batch``.

The first call starts one ``verl-score worker`` process for this Python
process; every later call is a JSON line to it and one back. It runs the
code in the embedded sandbox, or on the SandboxFusion endpoints of
``SANDBOX_FUSION_URL``; ``VERL_SCORE_*`` environment variables and
:func:`configure` set the rest (timeout, memory limit, concurrency, ...), as
for the command line.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from verl_score._binary import find_binary
from verl_score._version import __version__

__all__ = [
    "__version__",
    "Score",
    "VerlScoreError",
    "close",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "configure",
    "find_binary",
    "score_details",
    "score_file",
]


class VerlScoreError(RuntimeError):
    """verl-score failed: the message is the command's own (its stderr).

    ``exit_code`` is the process's exit status (None while it runs).
    """

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code


# verl's verdict codes, and the names the result dict counts them under.
_COUNTS = (
    (1, "passed"),
    (0, "wrong_answer"),
    (-1, "api_error"),
    (-2, "runtime_error"),
    (-3, "timeout"),
    (-4, "compile_error"),
)


@dataclass
class Score:
    """The whole answer to one reward call."""

    score: float
    verdicts: list[int] = field(default_factory=list)  # 1 True, 0 False, -1..-4 as verl
    statuses: list[str] = field(default_factory=list)
    error: str = ""  # reward_error: why no case ran (e.g. a missing code block)
    language: str = ""
    continuous: bool = False
    infra: bool = False  # a case met an infrastructure failure (-1 from a failed request)
    # A repository task's outcome (SWE rows): outcome, resolved, patch_applied,
    # f2p_passed/f2p_total, p2p_passed/p2p_total, flags, the log's end, ...
    swe: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """verl's dict form: the score and counts of each verdict.

        Every value is a number, and every call has the same keys, so verl
        can average each key over a batch (reward_extra_info).
        """
        d: dict[str, Any] = {"score": self.score, "acc": float(bool(self.verdicts) and all(v == 1 for v in self.verdicts))}
        d["cases"] = len(self.verdicts)
        for code, name in _COUNTS:
            d[name] = sum(1 for v in self.verdicts if v == code)
        d["infra"] = int(self.infra)
        return d


def _flags(options: dict[str, Any]) -> list[str]:
    """Turn keyword options into command-line flags: sandbox_url=[a, b] is
    --sandbox-url=a --sandbox-url=b, audit=True is --audit=true."""
    args = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool):
                v = "true" if v else "false"
            args.append(f"{flag}={v}")
    return args


def _json_default(o: Any) -> Any:
    # numpy arrays and scalars (ground truths read by pandas or datasets)
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    raise TypeError(f"ground_truth holds a {type(o).__name__}, which has no JSON form")


class _Worker:
    """One `verl-score worker` process and the calls waiting for it."""

    def __init__(self, args: list[str]):
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._next = 0
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._dead: VerlScoreError | None = None
        self._started = False
        try:
            self.proc = subprocess.Popen(
                [find_binary(), "worker", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Ctrl-C in a terminal or notebook interrupts Python, not the
                # worker that its later calls still need.
                start_new_session=True,
            )
        except OSError as e:
            raise VerlScoreError(f"cannot start verl-score: {e}") from e
        self._err_thread = threading.Thread(target=self._read_stderr, name="verl-score-stderr", daemon=True)
        self._err_thread.start()
        first = self.proc.stdout.readline()
        try:
            ready = json.loads(first) if first else None
        except ValueError:
            ready = None
        if not ready or not ready.get("ready"):
            self.proc.stdin.close()
            self.proc.wait()
            self._err_thread.join(timeout=5)
            self.proc.stdout.close()
            self.proc.stderr.close()
            raise VerlScoreError(self._failure("verl-score worker did not start"), self.proc.returncode)
        with self._lock:
            self._started = True
            for line in self._stderr:
                print(line, file=sys.stderr)
        self.version = ready.get("version", "")
        self.sandbox = ready.get("sandbox", "")
        self._out_thread = threading.Thread(target=self._read_results, name="verl-score-results", daemon=True)
        self._out_thread.start()

    def _read_stderr(self) -> None:
        # Lines before the ready line belong to a failed start's exception;
        # after it (warnings), they go on to this process's stderr.
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                self._stderr.append(line)
                if self._started:
                    print(line, file=sys.stderr)

    def _failure(self, what: str) -> str:
        tail = "\n".join(self._stderr).strip()
        return f"{what}: {tail}" if tail else f"{what} (exit status {self.proc.returncode})"

    def _read_results(self) -> None:
        for line in self.proc.stdout:
            try:
                res = json.loads(line)
            except ValueError:
                continue  # not a result: nothing waits for it
            with self._lock:
                fut = self._pending.pop(res.get("id"), None)
            if fut is not None:
                fut.set_result(res)
        # The worker ended: every call still waiting fails with its words.
        self.proc.wait()
        self._err_thread.join(timeout=5)
        err = VerlScoreError(self._failure("verl-score worker exited"), self.proc.returncode)
        with self._lock:
            self._dead = err
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            fut.set_exception(err)

    def submit(self, request: dict[str, Any]) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._dead is not None:
                raise self._dead
            self._next += 1
            request["id"] = self._next
            line = json.dumps(request, default=_json_default, ensure_ascii=False).encode("utf-8") + b"\n"
            self._pending[self._next] = fut
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except OSError as e:
                self._pending.pop(self._next, None)
                raise VerlScoreError(self._failure(f"cannot write to verl-score worker ({e})"), self.proc.poll()) from e
        return fut

    def close(self, timeout: float = 10) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out_thread.join(timeout=5)
        self._err_thread.join(timeout=5)
        self.proc.stdout.close()
        self.proc.stderr.close()


_state_lock = threading.Lock()
_worker: _Worker | None = None
_options: dict[str, Any] = {}


def configure(**options: Any) -> None:
    """Set the worker's options, as the flags of ``verl-score run`` (without
    the dashes): ``configure(sandbox_url="http://sandbox:8080/run_code",
    timeout=10, memory_limit_mb=1024, max_concurrent=64, language="auto")``.

    A worker already running is closed; the next call starts one with these
    options. Options not given keep their environment or default values.
    """
    global _options
    close()
    with _state_lock:
        _options = dict(options)


def _get_worker() -> _Worker:
    global _worker
    with _state_lock:
        # A forked child (multiprocessing) starts a worker of its own: the
        # parent's pipes are not its to use.
        if _worker is None or _worker.pid != os.getpid() or _worker._dead is not None:
            _worker = _Worker(_flags(_options))
        return _worker


def close() -> None:
    """Stop this process's worker, if one runs (also done at exit)."""
    global _worker
    with _state_lock:
        w, _worker = _worker, None
    if w is not None and w.pid == os.getpid():
        w.close()


atexit.register(close)

# Keyword arguments verl may pass that only its own scorer uses: the worker
# has its settings from configure() and the environment.
# verl's reward loop passes its reward model's router and tokenizer too.
_VERL_KWARGS = {"sandbox_fusion_url", "concurrent_semaphore", "memory_limit_mb", "reward_router_address",
                "reward_model_tokenizer"}


def _request(data_source, solution_str, ground_truth, language) -> dict[str, Any]:
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8", "replace")
    req = {"data_source": "" if data_source is None else str(data_source), "solution_str": solution_str, "ground_truth": ground_truth}
    if language:
        req["language"] = language
    return req


def _score_of(res: dict[str, Any]) -> Score:
    return Score(
        score=float(res["score"]),
        verdicts=list(res.get("verdicts") or []),
        statuses=list(res.get("statuses") or []),
        error=res.get("error", ""),
        language=res.get("language", ""),
        swe=res.get("swe"),
        continuous=bool(res.get("continuous")),
        infra=bool(res.get("infra")),
    )


_warned: set[str] = set()


def _check_kwargs(kwargs: dict[str, Any]) -> None:
    # verl's reward managers pass what their configuration holds; an
    # argument this function does not know is said once, never fatal to a
    # training run.
    unknown = set(kwargs) - _VERL_KWARGS - _warned
    if unknown:
        _warned.update(unknown)
        warnings.warn(
            f"verl_score: ignoring keyword arguments {sorted(unknown)}; worker options go to verl_score.configure()",
            stacklevel=3,
        )


def score_details(data_source, solution_str, ground_truth, extra_info=None, *, language: str | None = None, **kwargs) -> Score:
    """Score one response and return everything about it (a :class:`Score`)."""
    _check_kwargs(kwargs)
    return _score_of(_get_worker().submit(_request(data_source, solution_str, ground_truth, language)).result())


def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, return_dict: bool = True, language: str | None = None, **kwargs):
    """verl's custom reward function: the reward of one response.

    Returns a dict (``score``, ``acc``, ``cases`` and a count of each verdict:
    ``passed``, ``wrong_answer``, ``runtime_error``, ``timeout``,
    ``compile_error``, ``api_error``, plus ``infra``), or the score alone as a
    float with ``return_dict=False``. The score is the one ``verl-score
    run`` gives the same response.
    """
    s = score_details(data_source, solution_str, ground_truth, extra_info, language=language, **kwargs)
    return s.as_dict() if return_dict else s.score


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None, *, return_dict: bool = True,
                              language: str | None = None, **kwargs):
    """:func:`compute_score` as a coroutine, for verl's reward loop, which
    awaits a reward function that is one (``inspect.iscoroutinefunction``)
    and runs any other in a thread pool. The same arguments and result; many
    calls are in flight at once on one worker, with no thread each: each
    waits on the worker's answer, which the one reader thread hands over.
    """
    _check_kwargs(kwargs)
    fut = _get_worker().submit(_request(data_source, solution_str, ground_truth, language))
    s = _score_of(await asyncio.wrap_future(fut))
    return s.as_dict() if return_dict else s.score


def compute_score_batch(
    data_sources: Sequence,
    solution_strs: Sequence[str],
    ground_truths: Sequence,
    extra_infos: Sequence | None = None,
    *,
    return_dict: bool = True,
    languages: Sequence[str | None] | None = None,
    **kwargs,
) -> list:
    """verl's batch reward function: every response of the batch is sent at
    once, so the worker runs them concurrently (up to its max_concurrent)."""
    _check_kwargs(kwargs)
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise ValueError(f"verl_score: {len(data_sources)} data sources, {n} solutions and {len(ground_truths)} ground truths")
    w = _get_worker()
    langs = languages if languages is not None else [None] * n
    futs = [w.submit(_request(d, s, g, lang)) for d, s, g, lang in zip(data_sources, solution_strs, ground_truths, langs)]
    scores = [_score_of(f.result()) for f in futs]
    return [s.as_dict() if return_dict else s.score for s in scores]


def score_file(path: str | os.PathLike, *, output: str | os.PathLike | None = None, **options: Any) -> dict[str, Any]:
    """Run ``verl-score run PATH`` and return its summary (as ``--summary``
    writes it). ``output`` is ``-o``; other options are run's flags without
    the dashes (``language="auto"``, ``cases_out="cases.jsonl"``, ...).
    Raises :class:`VerlScoreError` with the command's message when it fails.
    """
    with tempfile.TemporaryDirectory(prefix="verl-score-") as tmp:
        summary = os.path.join(tmp, "summary.json")
        args = [find_binary(), "run", os.fspath(path), "--quiet", "--summary", summary]
        if output is not None:
            args += ["-o", os.fspath(output)]
        args += _flags(options)
        proc = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        message = proc.stderr.decode("utf-8", "replace").strip()
        if proc.returncode != 0:
            raise VerlScoreError(message or f"verl-score run exited {proc.returncode}", proc.returncode)
        if message:
            print(message, file=sys.stderr)
        with open(summary, encoding="utf-8") as f:
            return json.load(f)

