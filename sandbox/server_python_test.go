//go:build linux

package sandbox

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/server"
)

// verlStyleClient posts the way verl's call_sandbox_api does (json.dumps of
// the payload, the same headers) and prints the fields verl reads from the
// answer, one per line.
const verlStyleClient = `
import json, sys, urllib.request
url = sys.argv[1]
for lang, code, stdin in [("python", "print(input()[::-1])", "abc"),
                          ("cpp", "#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a*b);}", "6 7"),
                          ("python", "raise SystemExit(3)", None)]:
    payload = json.dumps({"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": stdin,
                          "memory_limit_MB": 1024, "language": lang, "files": {}, "fetch_files": []})
    req = urllib.request.Request(url, data=payload.encode(), headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = json.loads(resp.read())
    run = body.get("run_result") or {}
    comp = body.get("compile_result")
    print(lang, body.get("status"), comp.get("status") if comp else None, run.get("status"), run.get("return_code"), json.dumps(run.get("stdout")))
try:
    urllib.request.urlopen(urllib.request.Request(url, data=b'{"code": "x", "language": "cobol"}', headers={"Content-Type": "application/json"}), timeout=30)
except urllib.error.HTTPError as e:
    print("cobol", e.code, "detail" in json.loads(e.read()))
`

// TestVerlStylePythonClient talks to the server from Python exactly as
// verl's client does, so that "verl works unchanged" is checked from the
// other language's side of the protocol.
func TestVerlStylePythonClient(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	l := sharedSandbox(t)
	needTools(t, l, "cpp")
	srv := httptest.NewServer(server.New(l, server.Options{}).Handler())
	defer srv.Close()
	out, err := exec.Command("/usr/bin/python3", "-c", verlStyleClient, srv.URL+"/run_code").CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	want := []string{
		`python Success None Finished 0 "cba\n"`,
		`cpp Success Finished Finished 0 "42\n"`,
		`python Failed None Finished 3 ""`,
		`cobol 422 True`,
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// verlLoadClient sends n requests at once from threads, each as verl's
// call_sandbox_api does (urllib, its payload and headers), and prints
// one line per request: its HTTP status and whether stdout was right.
const verlLoadClient = `
import json, sys, threading, urllib.request, urllib.error
url, n = sys.argv[1], int(sys.argv[2])
results = [None] * n
def one(i):
    payload = json.dumps({"compile_timeout": 10, "run_timeout": 10, "code": "print(int(input()) * 2)", "stdin": str(i),
                          "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []})
    req = urllib.request.Request(url, data=payload.encode(), headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            body = json.loads(resp.read())
        ok = (body.get("run_result") or {}).get("stdout") == "%d\n" % (2 * i)
        results[i] = "%d %s" % (resp.status, ok)
    except urllib.error.HTTPError as e:
        results[i] = "%d False" % e.code
    except Exception as e:
        results[i] = "error " + repr(e)
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print("\n".join(results))
`

// TestVerlConcurrencyAgainstDefaults: 256 requests at once, verl's
// recommended max_concurrent, against a server with default options on
// two slots: every one is answered, none with 503, each with its output.
func TestVerlConcurrencyAgainstDefaults(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	l := newLocal(t, Options{Concurrency: 2})
	srv := httptest.NewServer(server.New(l, server.Options{Slots: 2}).Handler())
	defer srv.Close()
	const n = 256
	out, err := exec.Command("/usr/bin/python3", "-c", verlLoadClient, srv.URL+"/run_code", strconv.Itoa(n)).
		CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != n {
		t.Fatalf("got %d answers, want %d:\n%s", len(lines), n, out)
	}
	bad := 0
	for i, line := range lines {
		if line != "200 True" {
			bad++
			if bad <= 5 {
				t.Errorf("request %d: got %q, want 200 with the right stdout", i, line)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d requests not answered right", bad, n)
	}
}
