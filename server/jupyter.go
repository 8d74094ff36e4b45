package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandboxclient"
)

// SandboxFusion's /run_jupyter runs a request's cells, in order, in one
// Python kernel started for the request: a cell sees what the cells before
// it defined, and an error in one does not stop the next. Each cell's
// result is its stdout, its stderr, what it displayed (the value of its
// last expression as {"text/plain": repr}, a matplotlib figure as
// {"image/png": base64}) and its error ({"ename", "evalue",
// "traceback"}).
//
// Here the session is one process of the sandbox the request's /run_code
// would get: the driver below runs the cells in one namespace, under the
// same containment and limits (memory_limit_MB, total_timeout for the
// whole session, cell_timeout for each cell), and writes the cells'
// results to a file that comes back with the answer. The session ends
// with the request.

// JupyterRequest is the body of POST /run_jupyter.
type JupyterRequest struct {
	Cells         []string          `json:"cells"`
	CellTimeout   float64           `json:"cell_timeout"`
	TotalTimeout  float64           `json:"total_timeout"`
	MemoryLimitMB int               `json:"memory_limit_MB"`
	Kernel        string            `json:"kernel"`
	Files         map[string]string `json:"files"`
	FetchFiles    []string          `json:"fetch_files"`
}

// CellResult is one cell's outcome.
type CellResult struct {
	Stdout  string           `json:"stdout"`
	Stderr  string           `json:"stderr"`
	Display []map[string]any `json:"display"`
	Error   []map[string]any `json:"error"`
}

// JupyterResponse is the body of the answer.
type JupyterResponse struct {
	Status          string                    `json:"status"`
	Message         string                    `json:"message"`
	Driver          *sandboxclient.StepResult `json:"driver"`
	Cells           []CellResult              `json:"cells"`
	ExecutorPodName *string                   `json:"executor_pod_name"`
	Files           map[string]string         `json:"files"`
}

// jupyterOutput is where the driver writes the cells' results, relative
// to the session's working directory.
const jupyterOutput = ".verl_score_jupyter/output.json"

// SandboxFusion's defaults.
const (
	defaultTotalTimeout = 45.0
	// jupyterSlack is the time the session gets beyond total_timeout to
	// start and write its results (SandboxFusion gives its Jupyter kernel
	// 10 s; the driver here starts in milliseconds).
	jupyterSlack = 2.0
)

func (s *Server) handleRunJupyter(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	code, status := s.runJupyter(w, r)
	s.metrics.observeRequest(code, status)
}

func (s *Server) runJupyter(w http.ResponseWriter, r *http.Request) (int, string) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return http.StatusMethodNotAllowed, ""
	}
	if s.draining.Load() {
		s.loadHeaders(w)
		w.Header().Set("Retry-After", "1")
		writeJSON(
			w,
			http.StatusServiceUnavailable,
			map[string]string{"detail": "shutting down: send this request to another server"},
		)
		return http.StatusServiceUnavailable, ""
	}
	body, code := s.readBody(w, r)
	if code != 0 {
		return code, ""
	}
	req := JupyterRequest{TotalTimeout: defaultTotalTimeout, MemoryLimitMB: -1, Kernel: "python3"}
	if problems := decodeJupyter(body, &req); len(problems) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, validationError{Detail: problems})
		return http.StatusUnprocessableEntity, ""
	}
	release, ok, err := s.acquire(r.Context(), int64(len(body)))
	if !ok {
		s.loadHeaders(w)
		w.Header().Set("Retry-After", s.retryAfter())
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "sandbox queue is full, retry later"})
		return http.StatusServiceUnavailable, ""
	}
	if err != nil {
		return 499, ""
	}
	start := time.Now()
	resp := s.jupyter(r, &req)
	s.metrics.observeRun("jupyter", time.Since(start))
	release()
	if r.Context().Err() != nil {
		return 499, ""
	}
	s.loadHeaders(w)
	writeJSON(w, http.StatusOK, resp)
	return http.StatusOK, resp.Status
}

// decodeJupyter reads a /run_jupyter body over req's defaults and lists
// what is wrong with it, as FastAPI would.
func decodeJupyter(body []byte, req *JupyterRequest) []fieldError {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return []fieldError{{Loc: []any{"body"}, Msg: "the body is not a JSON object: " + err.Error(), Type: "json_invalid"}}
	}
	var problems []fieldError
	field := func(name string, into any, msg string) {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			return
		}
		if err := json.Unmarshal(v, into); err != nil {
			problems = append(problems, fieldError{Loc: []any{"body", name}, Msg: msg, Type: "type_error"})
		}
	}
	if _, ok := raw["cells"]; !ok {
		problems = append(problems, fieldError{Loc: []any{"body", "cells"}, Msg: "Field required", Type: "missing"})
	}
	field("cells", &req.Cells, "cells must be a list of strings")
	field("cell_timeout", &req.CellTimeout, "cell_timeout must be a number")
	field("total_timeout", &req.TotalTimeout, "total_timeout must be a number")
	field("memory_limit_MB", &req.MemoryLimitMB, "memory_limit_MB must be an integer")
	field("kernel", &req.Kernel, "kernel must be a string")
	field("files", &req.Files, "files must map paths to base64 contents")
	field("fetch_files", &req.FetchFiles, "fetch_files must be a list of paths")
	if req.Kernel != "python3" {
		problems = append(
			problems,
			fieldError{Loc: []any{"body", "kernel"}, Msg: "Input should be 'python3'", Type: "literal_error"},
		)
	}
	if req.TotalTimeout <= 0 || req.CellTimeout < 0 {
		problems = append(
			problems,
			fieldError{
				Loc:  []any{"body", "total_timeout"},
				Msg:  "timeouts must not be negative, and total_timeout must be positive",
				Type: "value_error",
			},
		)
	}
	return problems
}

// jupyter runs req's session in the sandbox and reads its cells' results.
func (s *Server) jupyter(r *http.Request, req *JupyterRequest) *JupyterResponse {
	cells, _ := json.Marshal(req.Cells)
	code := strings.Replace(jupyterDriver, "CELLS_B64", base64.StdEncoding.EncodeToString(cells), 1)
	code = strings.Replace(code, "CELL_TIMEOUT", fmt.Sprint(req.CellTimeout), 1)
	run := &sandboxclient.Request{
		Code: code, Language: "python",
		CompileTimeout: req.TotalTimeout + jupyterSlack, RunTimeout: req.TotalTimeout + jupyterSlack,
		MemoryLimitMB: req.MemoryLimitMB, Files: req.Files,
		FetchFiles: append(append([]string{}, req.FetchFiles...), jupyterOutput),
	}
	resp := &JupyterResponse{Status: sandboxclient.StatusSuccess, Cells: []CellResult{}, Files: map[string]string{}}
	answer, err := s.client.Run(r.Context(), run)
	if err != nil {
		resp.Status, resp.Message = sandboxclient.StatusSandboxError, fmt.Sprintf("exception on running jupyter: %v", err)
		return resp
	}
	resp.Driver, resp.ExecutorPodName = answer.RunResult, answer.ExecutorPodName
	for k, v := range answer.Files {
		if k != jupyterOutput {
			resp.Files[k] = v
		}
	}
	out, ok := answer.Files[jupyterOutput]
	if answer.RunResult == nil || answer.RunResult.Status != sandboxclient.StepFinished || !ok {
		resp.Status = sandboxclient.StatusFailed
		resp.Message = answer.Message
		return resp
	}
	b, err := base64.StdEncoding.DecodeString(out)
	if err == nil {
		err = json.Unmarshal(b, &resp.Cells)
	}
	if err != nil {
		resp.Status, resp.Cells = sandboxclient.StatusFailed, []CellResult{}
		resp.Message = "the session's results could not be read: " + err.Error()
	}
	return resp
}

// jupyterDriver runs the cells (CELLS_B64, a base64 JSON list) in one
// namespace, each under CELL_TIMEOUT seconds (0: none), and writes their
// results to jupyterOutput.
const jupyterDriver = `import ast, base64, contextlib, io, json, os, signal, sys, traceback, warnings
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message=".*non-interactive.*")
_cells = json.loads(base64.b64decode("CELLS_B64"))
_cell_timeout = float("CELL_TIMEOUT")
_out = ".verl_score_jupyter/output.json"

class _CellTimeout(BaseException):
    pass

def _alarm(signum, frame):
    raise _CellTimeout()

signal.signal(signal.SIGALRM, _alarm)
_ns = {"__name__": "__main__", "__builtins__": __builtins__}
_results = []

def _figures(display):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        display.append({"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": repr(fig)})
    plt.close("all")

def _write():
    os.makedirs(os.path.dirname(_out), exist_ok=True)
    with open(_out, "w") as f:
        json.dump(_results, f)

for _src in _cells:
    _r = {"stdout": "", "stderr": "", "display": [], "error": []}
    _o, _e = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(_o), contextlib.redirect_stderr(_e):
            if _cell_timeout > 0:
                signal.setitimer(signal.ITIMER_REAL, _cell_timeout)
            try:
                _tree = ast.parse(_src, "<cell>", "exec")
                _last = None
                if _tree.body and isinstance(_tree.body[-1], ast.Expr):
                    _last = ast.Expression(_tree.body.pop().value)
                exec(compile(_tree, "<cell>", "exec"), _ns)
                if _last is not None:
                    _v = eval(compile(_last, "<cell>", "eval"), _ns)
                    if _v is not None:
                        _ns["_"] = _v
                        _r["display"].append({"text/plain": repr(_v)})
                _figures(_r["display"])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _CellTimeout:
        _r["error"].append({"ename": "TimeoutError", "evalue": "the cell ran past cell_timeout (%gs)" % _cell_timeout, "traceback": []})
    except BaseException as _exc:
        _r["error"].append({"ename": type(_exc).__name__, "evalue": str(_exc),
                            "traceback": traceback.format_exception(type(_exc), _exc, _exc.__traceback__)})
    _r["stdout"], _r["stderr"] = _o.getvalue(), _e.getvalue()
    _results.append(_r)
    _write()
`
