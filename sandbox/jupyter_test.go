//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/server"
)

// runJupyter posts a /run_jupyter body to a serve over the shared
// sandbox and decodes the answer.
func runJupyter(t *testing.T, body string) (int, server.JupyterResponse) {
	t.Helper()
	l := sharedSandbox(t)
	needTools(t, l, "python")
	srv := httptest.NewServer(server.New(l, server.Options{}).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/run_jupyter", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r server.JupyterResponse
	raw := new(bytes.Buffer)
	raw.ReadFrom(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw.Bytes(), &r); err != nil {
			t.Fatalf("answer %s: %v", raw, err)
		}
	}
	return resp.StatusCode, r
}

func cells(t *testing.T, body string, n int) []server.CellResult {
	t.Helper()
	code, r := runJupyter(t, body)
	if code != http.StatusOK || r.Status != "Success" || len(r.Cells) != n {
		t.Fatalf(
			"HTTP %d, status %q (%s), %d cells, want 200 Success with %d cells; driver %+v",
			code,
			r.Status,
			r.Message,
			len(r.Cells),
			n,
			r.Driver,
		)
	}
	return r.Cells
}

// SandboxFusion's jupyter runner cases (sandbox/tests/runners/test_jupyter.py).
func TestJupyterPrint(t *testing.T) {
	c := cells(t, `{"cells": ["print(123)"]}`, 1)
	if c[0].Stdout != "123\n" {
		t.Errorf("stdout %q", c[0].Stdout)
	}
}

func TestJupyterMultiCell(t *testing.T) {
	c := cells(t, `{"cells": ["a = \"hello\"", "a", "print(a)"]}`, 3)
	if c[0].Stdout != "" || len(c[1].Display) != 1 || c[1].Display[0]["text/plain"] != "'hello'" ||
		c[2].Stdout != "hello\n" {
		t.Errorf("cells %+v", c)
	}
}

func TestJupyterMultiCellRaise(t *testing.T) {
	c := cells(
		t,
		`{"cells": ["a = \"hello\"", "import sys\nsys.stderr.write(\"This is an error message\\n\")", "assert False", "print(a)"]}`,
		4,
	)
	if c[0].Stdout != "" || c[1].Stderr != "This is an error message\n" || len(c[2].Error) != 1 ||
		c[2].Error[0]["ename"] != "AssertionError" ||
		c[3].Stdout != "hello\n" {
		t.Errorf("cells %+v", c)
	}
	// The value of a last expression that writes to stderr is shown too.
	if len(c[1].Display) != 1 || c[1].Display[0]["text/plain"] != "25" {
		t.Errorf("the write's return value: %+v", c[1].Display)
	}
}

func TestJupyterPlot(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import matplotlib").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no matplotlib: .ci/run installs python3-matplotlib")
		}
		t.Skip("SKIPPED: no matplotlib for /usr/bin/python3 (apt-get install python3-matplotlib)")
	}
	c := cells(
		t,
		`{"cells": ["import matplotlib.pyplot as plt", "\nx = [1, 2, 3, 4, 5]\ny = [2, 3, 5, 7, 11]\n\nplt.plot(x, y)\n\nplt.title('Simple Plot')\nplt.xlabel('X-axis')\nplt.ylabel('Y-axis')\n\nplt.show()\n    "]}`,
		2,
	)
	if len(c[1].Display) == 0 || c[1].Display[0]["image/png"] == nil {
		t.Errorf("the plot cell displayed %+v, want an image/png; cells %+v", c[1].Display, c)
	}
}

// A cell past cell_timeout is an error and the next cell still runs with
// the state before it; a session past total_timeout fails as a whole; a
// session over its memory limit fails the cell that asked; a bad kernel
// is a 422.
func TestJupyterLimits(t *testing.T) {
	c := cells(t, `{"cells": ["n = 1", "while True:\n    n += 1", "print(n > 1)"], "cell_timeout": 1}`, 3)
	if len(c[1].Error) != 1 || c[1].Error[0]["ename"] != "TimeoutError" || c[2].Stdout != "True\n" {
		t.Errorf("cell timeout: %+v", c)
	}
	code, r := runJupyter(t, `{"cells": ["import time\ntime.sleep(60)"], "total_timeout": 1}`)
	if code != http.StatusOK || r.Status != "Failed" || r.Driver == nil || r.Driver.Status != "TimeLimitExceeded" {
		t.Errorf("total timeout: HTTP %d %+v", code, r)
	}
	c = cells(t, `{"cells": ["x = bytearray(400 * 1024 * 1024)", "print('still here')"], "memory_limit_MB": 256}`, 2)
	if len(c[0].Error) != 1 || c[0].Error[0]["ename"] != "MemoryError" || c[1].Stdout != "still here\n" {
		t.Errorf("memory limit: %+v", c)
	}
	if code, _ := runJupyter(t, `{"cells": ["1"], "kernel": "ruby"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("kernel ruby: HTTP %d, want 422", code)
	}
	if code, _ := runJupyter(t, `{"cell_timeout": 1}`); code != http.StatusUnprocessableEntity {
		t.Errorf("no cells: HTTP %d, want 422", code)
	}
}
