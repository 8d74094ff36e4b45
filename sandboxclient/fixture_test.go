package sandboxclient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// protocolDir holds real SandboxFusion exchanges, copied verbatim from the
// shared data set (see its README).
const protocolDir = "../testdata/protocol"

// fixture is one recorded exchange: the request sent, the HTTP status and
// the body the real server answered with.
type fixture struct {
	Note       string          `json:"note"`
	Request    json.RawMessage `json:"request"`
	HTTPStatus int             `json:"http_status"`
	Response   json.RawMessage `json:"response"`
}

func loadFixture(t testing.TB, name string) fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(protocolDir, name+".json"))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decode fixture %s: %v", name, err)
	}
	if len(f.Response) == 0 {
		t.Fatalf("fixture %s has no response", name)
	}
	return f
}

func sp(s string) *string { return &s }
