//go:build slowlangs && linux

package sandbox

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// TestSlowColdCachesGiveWarmVerdicts: on a machine with no caches at all
// (no Go build or module cache, no precompiled header, no javac archive),
// the first go_test (with testify), C++ and Java cases, sent at once, get
// the verdicts a warm machine gives them: the caches are built before their
// compiles' time starts, not inside it. Slow: the Go standard library is
// compiled from nothing.
func TestSlowColdCachesGiveWarmVerdicts(t *testing.T) {
	in := "4\n1 2 3 4\n"
	reqs := map[string]*sandboxclient.Request{
		"go_test": {Language: "go_test", Code: testifyCode("false", "true")},
		"cpp": {
			Language: "cpp",
			Code:     "#include <bits/stdc++.h>\nusing namespace std;\nint main() { int n; cin >> n; vector<long long> v(n); for (auto &x : v) cin >> x; sort(v.rbegin(), v.rend()); cout << accumulate(v.begin(), v.end(), 0LL) << ' ' << v[0] << endl; }\n",
			Stdin:    &in,
		},
		"java": {
			Language: "java",
			Code:     "import java.util.*;\nimport java.util.stream.*;\npublic class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in); int n = s.nextInt(); List<Long> v = new ArrayList<>(); for (int i = 0; i < n; i++) v.add(s.nextLong()); System.out.println(v.stream().mapToLong(Long::longValue).sum() + \" \" + Collections.max(v)); } }\n",
			Stdin:    &in,
		},
	}
	for _, r := range reqs {
		r.CompileTimeout, r.RunTimeout, r.MemoryLimitMB = 10, 20, 1024
	}
	runAll := func(l *Local) map[string]*sandboxclient.Response {
		out := map[string]*sandboxclient.Response{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for lang, req := range reqs {
			needTools(t, l, lang)
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := l.Run(context.Background(), req)
				if err != nil {
					t.Errorf("%s: %v", lang, err)
					return
				}
				mu.Lock()
				out[lang] = resp
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}

	warm := runAll(newLocal(t, Options{Concurrency: 2}))
	// Every cache of the sandbox starts empty. Not under /tmp: a run's
	// view has a /tmp of its own, which would hide the module cache.
	cache, err := os.MkdirTemp("/var/tmp", "verl-score-cold-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cache) })
	t.Setenv("XDG_CACHE_HOME", cache)
	cold := newLocal(t, Options{Concurrency: 2})
	got := runAll(cold)
	for lang, w := range warm {
		c := got[lang]
		if c == nil {
			continue
		}
		if w.Status != sandboxclient.StatusSuccess {
			t.Errorf("%s on the warm machine: %s", lang, respText(w, nil))
		}
		if c.Status != w.Status || c.RunResult == nil || w.RunResult == nil ||
			c.RunResult.Status != w.RunResult.Status || c.RunResult.Stdout != w.RunResult.Stdout && lang != "go_test" {
			t.Errorf("%s: cold %s\nwarm %s", lang, respText(c, nil), respText(w, nil))
		}
	}
	if using, why := cold.caches.PCHState(); !using {
		t.Errorf("the cold machine's C++ compile did not use the precompiled header: %s", why)
	}
	if using, why := cold.caches.JavacArchiveState(); !using {
		t.Errorf("the cold machine's javac did not start from its archive: %s", why)
	}
}
