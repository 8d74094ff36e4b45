package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// JavacJVMFlags are javac's JVM flags; its class-data archive is dumped
// with the same ones, or the JVM would not map it.
var JavacJVMFlags = []string{"-J-Xmx512m", "-J-XX:+UseSerialGC", "-J-XX:-UsePerfData"}

// JUnitConsole is the tool name of JUnit 5's console launcher, a jar
// (Debian: junit5) that java runs.
const JUnitConsole = "junit-platform-console-standalone"

// javaPublicClassPattern finds a Java file's public class, as
// SandboxFusion does to name the file of a junit request.
var javaPublicClassPattern = regexp.MustCompile(`\bpublic\s+(abstract\s+|final\s+)?class\s+(\w+)`)

// junitFile: Java code that imports JUnit and has no main method is a
// JUnit test file.
var (
	junitImport = regexp.MustCompile(`\bimport\s+(static\s+)?org\.junit\.`)
	javaMain    = regexp.MustCompile(`\bstatic\s+void\s+main\s*\(`)
)

// javaLibraries are jars a SandboxFusion image puts on the Java class path
// (MultiPL-E's Java programs import org.javatuples); each is used when
// installed (Debian: libjavatuples-java).
var javaLibraries = []string{"/usr/share/java/javatuples.jar"}

// javaClassPath is dir, the javaLibraries that exist, and the request's
// jars (in the step's working directory), as SandboxFusion's class path.
func javaClassPath(dir string, files []string) string {
	cp := dir
	for _, jar := range javaLibraries {
		if _, err := os.Stat(jar); err == nil {
			cp += ":" + jar
		}
	}
	return cp + jars(files)
}

// jars are the request's .jar files, each after a colon.
func jars(files []string) string {
	var s string
	for _, f := range files {
		if strings.HasSuffix(f, ".jar") {
			s += ":" + f
		}
	}
	return s
}

// javaOpts starts a JVM launcher script (scala, kotlinc) with the heap
// flag of a memory limit; without one the script's own defaults hold.
func javaOpts(memMB int, more string) []string {
	if memMB <= 0 {
		return nil
	}
	return []string{"/usr/bin/env", fmt.Sprintf("JAVA_OPTS=-Xmx%dm %s -XX:+UseSerialGC", HeapMB(memMB), more)}
}

// javaRun is `java [-Xmx] flags...`.
func javaRun(h Host, memMB int, flags ...string) []string {
	argv := []string{h.Tool("java")}
	if memMB > 0 {
		argv = append(argv, fmt.Sprintf("-Xmx%dm", HeapMB(memMB)))
	}
	return append(append(argv, "-XX:+UseSerialGC", "-XX:-UsePerfData"), flags...)
}

// scalaObjectPattern is SandboxFusion's rule for the object a Scala
// program runs: the first `object Name`, unless an `extends X {` comes
// first, which names none.
var scalaObjectPattern = regexp.MustCompile(`object\s+(\w+)(\s*)|(\s+extends\s+\w+\s*)\{`)

func scalaObject(code string) string {
	m := scalaObjectPattern.FindStringSubmatch(code)
	if m == nil {
		return ""
	}
	return m[1]
}

const jdk = "default-jdk-headless"

func init() {
	Register(&Language{
		Name: "java", Compiled: true,
		Fences: []string{"java"},
		Detect: func(code string) string {
			if junitImport.MatchString(code) && !javaMain.MatchString(code) {
				return "junit"
			}
			return ""
		},
		Tools:  []Tool{{"javac", jdk}, {"java", jdk}},
		Extras: []string{"libjavatuples-java"},
		Runner: &Runner{
			RunProgram:   "java",
			Source:       "Main.java",
			HeapLimited:  true,
			CompileCache: ClassDataArchive,
			Compile: func(h Host, a Args) []string {
				return append(append([]string{h.Tool("javac")}, JavacJVMFlags...),
					"-encoding", "UTF-8", "-cp", javaClassPath(".", a.Files), "Main.java")
			},
			Run: func(h Host, a Args) []string {
				return javaRun(h, a.MemMB, "-cp", javaClassPath(a.BinDir, a.Files), "-ea", "Main")
			},
		},
		Cases: func() []Case {
			return []Case{
				sumCase("java", "correct", javaCode("System.out.println(a + b);"), wantT),
				sumCase("java", "wrong", javaCode("System.out.println(a - b);"), wantF),
				sumCase("java", "runtime", javaCode("int[] x = new int[1]; System.out.println(x[(int) (a + b)]);"), wantRE),
				timeoutCase("java", javaCode("long x = 0; while (a + b > 0) { x++; }"), 1),
				sumCase("java", "compile", javaCode("System.out.println(a + c);"), wantCE),
			}
		},
	})
	// JUnit 5's console launcher finds the tests in the classes built from
	// the code (a file named after its public class) and the request's
	// other .java files and jars, as SandboxFusion's runner does.
	Register(&Language{
		Name: "junit", Compiled: true,
		Tools: []Tool{{"javac", jdk}, {"java", jdk}, {JUnitConsole, "junit5"}},
		Slow:  true,
		Runner: &Runner{
			RunProgram:  "java",
			Source:      "Main.java",
			HeapLimited: true,
			SourceName: func(code string) string {
				if m := javaPublicClassPattern.FindStringSubmatch(code); m != nil {
					return m[2] + ".java"
				}
				return "Main.java"
			},
			Compile: func(h Host, a Args) []string {
				// The shell expands *.java as SandboxFusion's does.
				argv := append([]string{"/bin/sh", "-c", `exec "$0" "$@" *.java`, h.Tool("javac")}, JavacJVMFlags...)
				return append(argv, "-encoding", "UTF-8", "-cp", ".:"+h.Tool(JUnitConsole)+jars(a.Files))
			},
			Run: func(h Host, a Args) []string {
				return javaRun(h, a.MemMB, "-jar", h.Tool(JUnitConsole),
					"--class-path", a.BinDir+":"+h.Tool(JUnitConsole)+jars(a.Files), "--scan-class-path")
			},
		},
		Cases: func() []Case {
			return []Case{
				{
					Name:       "junit/pass",
					Language:   "junit",
					Code:       junitCode("assertEquals(3, Adder.add(1, 2));"),
					RunTimeout: 20,
					Want:       wantT,
				},
				{
					Name:       "junit/fail",
					Language:   "junit",
					Code:       junitCode("assertEquals(4, Adder.add(1, 2));"),
					RunTimeout: 20,
					Want:       wantRE,
				},
				{
					Name:       "junit/timeout",
					Language:   "junit",
					Code:       junitCode("while (Adder.add(1, 2) == 3) {}"),
					RunTimeout: 3,
					Want:       wantTO,
				},
				{Name: "junit/compile", Language: "junit", Code: junitCode("assertEquals(3, undefinedName);"), Want: wantCE},
			}
		},
	})
	Register(&Language{
		Name: "scala", Compiled: true,
		Fences: []string{"scala"},
		Tools:  []Tool{{"scalac", "scala"}, {"scala", "scala"}, {"java", jdk}},
		Slow:   true,
		Runner: &Runner{
			RunProgram:  "scala",
			Source:      "solution.scala",
			HeapLimited: true,
			Refuse: func(code string) string {
				if scalaObject(code) == "" {
					return "Object name not found."
				}
				return ""
			},
			Compile: func(h Host, _ Args) []string {
				return []string{"/usr/bin/env", "JAVA_OPTS=-Xmx1g -Xss4m -XX:+UseSerialGC", h.Tool("scalac"), "solution.scala"}
			},
			Run: func(h Host, a Args) []string {
				return append(javaOpts(a.MemMB, "-Xms32M"), h.Tool("scala"), "-cp", a.BinDir, scalaObject(a.Code))
			},
		},
		Cases: func() []Case {
			slow := func(c Case) Case { c.RunTimeout = 20; return c }
			return []Case{
				slow(sumCase("scala", "correct", scalaCode("println(a + b)"), wantT)),
				slow(sumCase("scala", "wrong", scalaCode("println(a * b)"), wantF)),
				slow(sumCase("scala", "runtime", scalaCode("assert(a == b)"), wantRE)),
				timeoutCase("scala", scalaCode("while (a + b > 0) {}"), 3),
				sumCase("scala", "compile", scalaCode("println(a + c)"), wantCE),
				// SandboxFusion refuses code without an object before compiling.
				sumCase("scala", "no-object", "class Main {}\n", wantSE),
			}
		},
	})
	// SandboxFusion runs `kotlin file.kts`; Debian's Kotlin (1.3) runs a
	// script only as `kotlinc -script`, which compiles and runs it in one
	// step as well.
	Register(&Language{
		Name: "kotlin_script", Compiled: true,
		Fences: []string{"kotlin", "kt", "kts"},
		Tools:  []Tool{{"kotlinc", "kotlin"}, {"java", jdk}},
		Slow:   true,
		Runner: &Runner{
			RunProgram:  "kotlinc",
			Source:      "solution.kts",
			HeapLimited: true,
			Run: func(h Host, a Args) []string {
				return append(javaOpts(a.MemMB, "-Xss2m"), h.Tool("kotlinc"), "-script", filepath.Join(a.Dir, "solution.kts"))
			},
		},
		Cases: func() []Case {
			const kts = "val (a, b) = readLine()!!.trim().split(\" \").map { it.toLong() }\n"
			slow := func(c Case) Case { c.RunTimeout = 40; return c }
			return []Case{
				slow(sumCase("kotlin_script", "correct", kts+"println(a + b)\n", wantT)),
				slow(sumCase("kotlin_script", "wrong", kts+"println(a * b)\n", wantF)),
				slow(sumCase("kotlin_script", "runtime", kts+"if (a != b) throw Exception(\"boom\")\n", wantRE)),
				timeoutCase("kotlin_script", kts+"while (a + b > 0) {}\n", 8),
				// A script is compiled in its one step: a bad one fails the run.
				slow(sumCase("kotlin_script", "syntax", "val x = \n", wantRE)),
			}
		},
	})
}

func javaCode(body string) string {
	return "import java.util.*;\n\npublic class Main {\n    public static void main(String[] args) {\n" +
		"        Scanner sc = new Scanner(System.in);\n        long a = sc.nextLong(), b = sc.nextLong();\n        " +
		body + "\n    }\n}\n"
}

func scalaCode(body string) string {
	return "object Main {\n  def main(args: Array[String]): Unit = {\n" +
		"    val Array(a, b) = scala.io.StdIn.readLine().trim.split(\" \").map(_.toLong)\n    " + body + "\n  }\n}\n"
}

func junitCode(stmt string) string {
	return "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n\n" +
		"public class Adder {\n    public static int add(int a, int b) { return a + b; }\n}\n\n" +
		"class AdderTest {\n    @Test\n    void adds() {\n        " + stmt + "\n    }\n}\n"
}
