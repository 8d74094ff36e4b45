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

// A precompiled bits/stdc++.h. Most competitive-programming C++ includes
// it, and parsing it is most of such a compile. GCC uses
// <dir>/bits/stdc++.h.gch in place of the header when <dir> comes first
// on the include path and the .gch was built with the same options;
// otherwise it quietly reads the header beside it, a copy of the real one,
// so a program compiles to the same thing either way. The .gch is built
// once per machine and compiler (by the user running verl-score: it reads
// only the system's header) and kept beside the Go build cache.

// PCHViewDir is where compiles see the header's directory in their view.
const PCHViewDir = "/pch"

// PCH returns the include directory with the precompiled header, or ""
// while it is being built (in the background, on first use) or where it
// cannot be.
func (c *Caches) PCH() string {
	return c.cachedFile(
		&c.pch,
		"g++",
		filepath.Join("bits", "stdc++.h.gch"),
		"plain compiles",
		"precompiled bits/stdc++.h",
		func() (string, error) {
			return buildPCH(c.Tools["g++"], filepath.Join(filepath.Dir(c.GoCache), "pch"))
		},
	)
}

// WaitPCH waits until the precompiled header is built or has failed and
// returns its directory, "" where there is none. Compiles call it before
// their time starts, so that a header being built costs them no verdict.
func (c *Caches) WaitPCH(ctx context.Context) string {
	c.PCH()
	c.pch.wait(ctx)
	return c.PCH()
}

// PCHState says how C++ compiles here: with the precompiled header, or why
// not.
func (c *Caches) PCHState() (using bool, detail string) {
	return c.cachedFileState(&c.pch, "g++")
}

// buildPCH returns the directory of the precompiled header for gxx,
// building it under cache if it is not there yet.
func buildPCH(gxx, cache string) (string, error) {
	// The header the compiler would include, found as the compiler finds it.
	c := exec.Command(gxx, append(append([]string{}, lang.CppFlags...), "-x", "c++", "-M", "-")...)
	c.Stdin = strings.NewReader("#include <bits/stdc++.h>\n")
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("find bits/stdc++.h: %v", err)
	}
	var header string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "/bits/stdc++.h") {
			header = f
			break
		}
	}
	if header == "" {
		return "", fmt.Errorf("%s includes no bits/stdc++.h", gxx)
	}
	text, err := os.ReadFile(header)
	if err != nil {
		return "", err
	}
	version, err := exec.Command(gxx, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", gxx, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", gxx, version, strings.Join(lang.CppFlags, " "), header)
	h.Write(text)
	return buildInCache(
		cache,
		hex.EncodeToString(h.Sum(nil))[:20],
		filepath.Join("bits", "stdc++.h.gch"),
		func(tmp string) error {
			bits := filepath.Join(tmp, "bits")
			if err := os.Mkdir(bits, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(bits, "stdc++.h"), text, 0o644); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			args := append(
				append([]string{}, lang.CppFlags...),
				"-x",
				"c++-header",
				filepath.Join(bits, "stdc++.h"),
				"-o",
				filepath.Join(bits, "stdc++.h.gch"),
			)
			if out, err := exec.CommandContext(ctx, gxx, args...).CombinedOutput(); err != nil {
				return fmt.Errorf("precompile %s: %v: %s", header, err, strings.TrimSpace(string(out)))
			}
			return os.Chmod(filepath.Join(bits, "stdc++.h.gch"), 0o644)
		},
	)
}
