package toolchain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/verl-score/verl-score/sandbox/lang"
)

// A class-data-sharing archive of javac. Most of a small Java compile is
// the JVM loading and verifying javac's own classes; the JDK's default CDS
// archive holds only the core library's. An archive dumped at the exit of
// one compile (-XX:ArchiveClassesAtExit) holds the classes javac loaded,
// already parsed, and later compiles map it instead of loading them again.
// It changes how javac's classes are loaded, not which classes or what
// they do: the class files a compile writes are the same. The archive is
// built once per machine and JDK, beside the precompiled header; a JVM
// that cannot use it (another JDK, a damaged file) ignores it silently
// and loads the classes itself.

// JavacArchiveViewDir is where compiles see the archive's directory.
const JavacArchiveViewDir = "/jsa"

// JavacArchiveName is the archive's file name in its directory.
const JavacArchiveName = "javac.jsa"

// JavacArchiveSample is what the archive is dumped from: a solution that
// uses what solutions usually do, so that javac loads the classes it
// loads for them.
const JavacArchiveSample = `import java.io.*;
import java.util.*;
import java.util.function.*;
import java.util.stream.*;

public class Main {
    record Pair(int a, long b) {}

    interface Op { long apply(long x); }

    static <T extends Comparable<T>> T max(List<T> xs) {
        T best = xs.get(0);
        for (T x : xs) if (x.compareTo(best) > 0) best = x;
        return best;
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringTokenizer st = new StringTokenizer(in.readLine());
        int n = Integer.parseInt(st.nextToken());
        long[] a = new long[n];
        Map<Long, Integer> count = new HashMap<>();
        PriorityQueue<Pair> pq = new PriorityQueue<>(Comparator.comparingLong(Pair::b));
        for (int i = 0; i < n; i++) {
            a[i] = Long.parseLong(st.nextToken());
            count.merge(a[i], 1, Integer::sum);
            pq.add(new Pair(i, a[i]));
        }
        Op twice = x -> 2 * x;
        List<Long> sorted = Arrays.stream(a).boxed().sorted().collect(Collectors.toList());
        String joined = sorted.stream().map(String::valueOf).collect(Collectors.joining(" "));
        StringBuilder sb = new StringBuilder();
        switch (n % 3) {
            case 0 -> sb.append("zero");
            default -> sb.append(String.format("%d %.3f", n, Math.sqrt(n)));
        }
        try (PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)))) {
            out.println(joined + " " + twice.apply(max(sorted)) + " " + pq.peek() + " " + sb + " " + count.size());
        }
    }
}
`

// JavacArchive returns the directory holding javac's archive, or "" while
// it is being built (in the background, on first use) or where it cannot
// be.
func (c *Caches) JavacArchive() string {
	return c.cachedFile(
		&c.jsa,
		"javac",
		JavacArchiveName,
		"plain javac starts",
		"javac's classes from a class-data archive",
		func() (string, error) {
			return buildJavacArchive(c.Tools["javac"], filepath.Join(filepath.Dir(c.GoCache), "jsa"))
		},
	)
}

// JavacArchiveState says how javac starts here: from its archive, or why
// not.
func (c *Caches) JavacArchiveState() (using bool, detail string) {
	return c.cachedFileState(&c.jsa, "javac")
}

// WaitJavacArchive waits until the archive is built or has failed and
// returns its directory, as WaitPCH.
func (c *Caches) WaitJavacArchive(ctx context.Context) string {
	c.JavacArchive()
	c.jsa.wait(ctx)
	return c.JavacArchive()
}

// buildJavacArchive returns the directory of javac's archive, dumping it
// under cache if it is not there yet.
func buildJavacArchive(javac, cache string) (string, error) {
	version, err := exec.Command(javac, "-J-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -J-version: %v", javac, err)
	}
	real, err := filepath.EvalSymlinks(javac)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(
		h,
		"%s\x00%s\x00%s\x00%d\x00%s\x00%s",
		javac,
		real,
		fi.ModTime(),
		fi.Size(),
		version,
		strings.Join(lang.JavacJVMFlags, " "),
	)
	h.Write([]byte(JavacArchiveSample))
	return buildInCache(cache, hex.EncodeToString(h.Sum(nil))[:20], JavacArchiveName, func(tmp string) error {
		src := filepath.Join(tmp, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, "Main.java"), []byte(JavacArchiveSample), 0o644); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		archive := filepath.Join(tmp, JavacArchiveName)
		args := append(
			append([]string{"-J-XX:ArchiveClassesAtExit=" + archive}, lang.JavacJVMFlags...),
			"-encoding",
			"UTF-8",
			"-d",
			src,
			filepath.Join(src, "Main.java"),
		)
		out, err := exec.CommandContext(ctx, javac, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("dump javac's archive: %v: %s", err, strings.TrimSpace(string(out)))
		}
		if fi, err := os.Stat(archive); err != nil || fi.Size() == 0 {
			return fmt.Errorf("javac dumped no archive: %s", strings.TrimSpace(string(out)))
		}
		if err := os.Chmod(archive, 0o644); err != nil {
			return err
		}
		return os.RemoveAll(src)
	})
}
