//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/verl-score/verl-score/sandbox/seccomp"
)

// TestDoctorSeccomp: `doctor --seccomp` lists the filter contained
// programs start under, rule by rule, with the digest a run's provenance
// names; with --json, the program too, of the length it says.
func TestDoctorSeccomp(t *testing.T) {
	f, err := seccomp.Host()
	if err != nil {
		t.Skipf("SKIPPED: no filter on this host: %v", err)
	}
	run := func(args ...string) []byte {
		var out bytes.Buffer
		c := newDoctorCmd(Streams{Out: &out, ErrOut: io.Discard})
		c.SetArgs(args)
		if err := c.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	text := string(run("--seccomp"))
	for _, want := range []string{"sha256 " + f.Digest(), "github.com/moby/profiles/seccomp", "io_uring_setup", "ENOSYS"} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor --seccomp does not say %q:\n%s", want, text)
		}
	}
	var rep struct {
		SHA256       string         `json:"sha256"`
		Instructions int            `json:"instructions"`
		Rules        []seccomp.Rule `json:"rules"`
		Program      []byte         `json:"program"`
	}
	if err := json.Unmarshal(run("--seccomp", "--json"), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SHA256 != f.Digest() || len(rep.Program) != 8*rep.Instructions || len(rep.Rules) != len(f.Rules) {
		t.Errorf("got sha256 %s, %d bytes for %d instructions, %d rules; want %s, 8 bytes each, %d rules",
			rep.SHA256, len(rep.Program), rep.Instructions, len(rep.Rules), f.Digest(), len(f.Rules))
	}
}
