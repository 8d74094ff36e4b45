package testcases

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// python is the real interpreter (the pyenv shim on PATH is much slower).
const python = "/usr/bin/python3"

// needPython skips the test when the real interpreter is absent.
func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not available: %v", python, err)
	}
}

// runPython runs script (a program text) with stdin and returns its
// stdout, failing the test when it exits non-zero.
func runPython(t testing.TB, script, stdin string) string {
	t.Helper()
	out, stderr, code := runPythonCode(t, script, &stdin)
	if code != 0 {
		t.Fatalf("python exited %d: %s", code, stderr)
	}
	return out
}

// runPythonCode runs a program like a sandbox does (a file run with
// python3, stdin given or none) and returns stdout, stderr and exit code.
func runPythonCode(t testing.TB, program string, stdin *string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	path := dir + "/main.py"
	if err := os.WriteFile(path, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONIOENCODING=utf-8")
	if stdin != nil {
		cmd.Stdin = bytes.NewBufferString(*stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		t.Fatalf("running python: %v", err)
	}
	return out.String(), errb.String(), 0
}
