package lang

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// NodeRuntime is the tool name of the sandbox's Node.js runtime: a
// directory with package.json, babel.config.js and node_modules (jest,
// Babel, lodash ...), made by sandbox/noderuntime/install.sh.
const NodeRuntime = "node-runtime"

const nodeRuntimePackage = "npm and the sandbox's Node.js runtime (sandbox/noderuntime/install.sh)"

// jestFile: code that imports jest's globals is a jest test file.
var jestFile = regexp.MustCompile(`from\s+['"]@jest/globals['"]|require\(\s*['"]@jest/globals['"]\s*\)`)

func detectJest(code string) string {
	if jestFile.MatchString(code) {
		return "jest"
	}
	return ""
}

// nodeModules links the runtime's node_modules into a nodejs or
// typescript run, where there is one, so that programs can import lodash
// and the like as on SandboxFusion.
func nodeModules(h Host) map[string]string {
	if rt := h.Tool(NodeRuntime); rt != "" {
		return map[string]string{"node_modules": rt + "/node_modules"}
	}
	return nil
}

func nodeCode(body string) string {
	return "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n" + body + "\n"
}

func jestCode(want string) string {
	return "import { expect, test } from '@jest/globals';\n\nfunction add(a: number, b: number): number { return a + b; " +
		"}\n\n" +
		"test('adds', () => {\n    expect(add(1, 2)).toBe(" + want + ");\n});\n"
}

func init() {
	Register(&Language{
		Name:   "nodejs",
		Fences: []string{"javascript", "js", "node", "nodejs", "jsx", "mjs", "cjs"},
		Detect: detectJest,
		Tools:  []Tool{{"node", "nodejs"}},
		Runner: &Runner{
			RunProgram:  "node",
			Source:      "solution.js",
			HeapLimited: true,
			Links:       nodeModules,
			Run: func(h Host, a Args) []string {
				argv := []string{h.Tool("node")}
				if a.MemMB > 0 {
					argv = append(argv, fmt.Sprintf("--max-old-space-size=%d", HeapMB(a.MemMB)))
				}
				return append(argv, filepath.Join(a.Dir, "solution.js"))
			},
		},
		Cases: func() []Case {
			return []Case{
				sumCase("nodejs", "correct", nodeCode("console.log(a + b);"), wantT),
				sumCase("nodejs", "wrong", nodeCode("console.log(a * b);"), wantF),
				sumCase("nodejs", "runtime", nodeCode("throw new Error('boom');"), wantRE),
				timeoutCase("nodejs", nodeCode("while (a + b > 0) {}"), 1),
			}
		},
	})
	// tsx runs TypeScript as SandboxFusion runs it. It starts Node.js
	// processes of its own, which get the heap flag through NODE_OPTIONS.
	Register(&Language{
		Name: "typescript", Compiled: true,
		Fences: []string{"typescript", "ts", "tsx", "mts"},
		Detect: detectJest,
		Tools:  []Tool{{"tsx", "npm: tsx (npm install -g tsx)"}, {"node", "nodejs"}},
		Runner: &Runner{
			RunProgram:  "tsx",
			Source:      "solution.ts",
			HeapLimited: true,
			Links:       nodeModules,
			Run: func(h Host, a Args) []string {
				return nodeOptions(a.MemMB, []string{h.Tool("tsx"), filepath.Join(a.Dir, "solution.ts")})
			},
		},
		Cases: func() []Case {
			const read = "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\n"
			return []Case{
				sumCase("typescript", "correct", read+"console.log(a + b);\n", wantT),
				sumCase("typescript", "wrong", read+"console.log(a * b);\n", wantF),
				sumCase("typescript", "runtime", "throw new Error('boom');\n", wantRE),
				timeoutCase("typescript", "while (true) {}\n", 2),
			}
		},
	})
	// SandboxFusion runs `npm run test` (jest, with Babel for TypeScript)
	// beside its Node.js runtime's package.json, babel.config.js and
	// node_modules.
	Register(&Language{
		Name:  "jest",
		Tools: []Tool{{"npm", "npm"}, {"node", "nodejs"}, {NodeRuntime, nodeRuntimePackage}},
		Slow:  true,
		Runner: &Runner{
			RunProgram:  "npm",
			Source:      "solution.test.ts",
			HeapLimited: true,
			Links: func(h Host) map[string]string {
				rt := h.Tool(NodeRuntime)
				return map[string]string{"node_modules": rt + "/node_modules", "package.json": rt + "/package.json",
					"babel.config.js": rt + "/babel.config.js"}
			},
			Run: func(h Host, a Args) []string {
				return nodeOptions(a.MemMB, []string{h.Tool("npm"), "run", "test"})
			},
		},
		Cases: func() []Case {
			return []Case{
				{Name: "jest/pass", Language: "jest", Code: jestCode("3"), RunTimeout: 30, Want: wantT},
				{Name: "jest/fail", Language: "jest", Code: jestCode("4"), RunTimeout: 30, Want: wantRE},
				{
					Name:       "jest/timeout",
					Language:   "jest",
					Code:       jestCode("3); while (add(1, 2) === 3) {}; expect(0"),
					RunTimeout: 3,
					Want:       wantTO,
				},
				{Name: "jest/syntax", Language: "jest", Code: "test('x', () => { expect(1).toBe(1) ", RunTimeout: 30, Want: wantRE},
			}
		},
	})
}
