//go:build linux

package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandboxclient"
)

// TestPCHSameResults compiles programs with and without the precompiled
// header and requires the same answers: one that uses it, one that turns
// on the library's debug mode first (GCC must then read the header
// itself), one that includes other headers only, and one that does not
// compile.
func TestPCHSameResults(t *testing.T) {
	fast := newLocal(t, Options{Concurrency: 2})
	plain := newLocal(t, Options{Concurrency: 2, NoFastPaths: true})
	needTools(t, fast, "cpp")
	fast.caches.WaitPCH(context.Background())
	if using, why := fast.caches.PCHState(); !using {
		t.Skipf("no precompiled header: %s", why)
	}
	in := "3\n1 2 3\n"
	programs := map[string]string{
		"typical": typicalCpp,
		// Debug mode changes what the header declares: the .gch does not
		// fit, and the checked vector must abort in both.
		"macro first": "#define _GLIBCXX_DEBUG\n#include <bits/stdc++.h>\nint main(){std::vector<int> v(1); std::cout << 6 << std::endl; return v[5];}\n",
		"no stdc++":   "#include <iostream>\nint main(){int n, s = 0, x; std::cin >> n; while (n--) { std::cin >> x; s += x; } std::cout << s << std::endl;}\n",
		"error":       "#include <bits/stdc++.h>\nint main(){ undefined_name(); }\n",
	}
	for name, code := range programs {
		t.Run(name, func(t *testing.T) {
			req := &sandboxclient.Request{
				Language:       "cpp",
				Code:           code,
				Stdin:          &in,
				CompileTimeout: 60,
				RunTimeout:     10,
				MemoryLimitMB:  1024,
			}
			a, errA := plain.Run(context.Background(), req)
			b, errB := fast.Run(context.Background(), req)
			if errA != nil || errB != nil {
				t.Fatalf("plain %v, fast %v", errA, errB)
			}
			if a.Status != b.Status || (a.RunResult == nil) != (b.RunResult == nil) {
				t.Fatalf("plain %s\nfast %s", respText(a, nil), respText(b, nil))
			}
			if a.RunResult != nil &&
				(a.RunResult.Stdout != b.RunResult.Stdout || *a.RunResult.ReturnCode != *b.RunResult.ReturnCode) {
				t.Errorf("plain %s\nfast %s", respText(a, nil), respText(b, nil))
			}
			if name == "error" && !strings.Contains(b.CompileResult.Stderr, "undefined_name") {
				t.Errorf("compile error not reported: %s", respText(b, nil))
			}
			if name != "error" && (b.RunResult == nil || b.RunResult.Stdout != "6\n") {
				t.Errorf("got %s", respText(b, nil))
			}
			if name == "macro first" && b.RunResult != nil && *b.RunResult.ReturnCode != -6 {
				t.Errorf("the checked vector did not abort: %s", respText(b, nil))
			}
		})
	}
}
