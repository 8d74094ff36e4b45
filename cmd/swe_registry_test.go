//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/verl-score/verl-score/results"
	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
	"github.com/verl-score/verl-score/sandboxclient"
)

// TestSWEPullsFromARegistry: rows name their images by registry reference,
// with no --images: run pulls each from a registry on loopback into the
// store (the second, on the first's base, fetches its own layer alone),
// scores them, and records the digests; the next run, the registry gone,
// finds them in the store; with --pull never and an image pulled nowhere
// the row is an environment error, not a 0.
func TestSWEPullsFromARegistry(t *testing.T) {
	_, images := sweDataset(t, nil, nil)
	calc := calcImage(t, images)
	plus, err := mutate.AppendLayers(calc, imagetest.FilesLayer(t, map[string]string{"opt/notes.txt": "a layer of its own\n"}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(quietRegistry())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	digests := map[string]v1.Hash{}
	for ref, img := range map[string]v1.Image{host + "/fixture/calc:1": calc, host + "/fixture/calc-plus:1": plus} {
		pushImage(t, ref, img)
		digests[ref], _ = img.Digest()
	}
	dir := t.TempDir()
	rows := func(refs ...string) string {
		var b strings.Builder
		for _, ref := range refs {
			b.WriteString(calcRow(t, "swe-fixture", ref, imagetest.CalcGoldPatch))
		}
		return writeFile(t, dir, fmt.Sprintf("rows-%d.jsonl", len(refs)), b.String())
	}
	refs := []string{host + "/fixture/calc:1", host + "/fixture/calc-plus:1"}
	in := rows(refs...)
	store := filepath.Join(dir, "store")
	summary := func(path string) *results.Summary {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var s results.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}

	out, sum := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "sum.json")
	code, stdout, stderr := run(context.Background(), "run", in, "-o", out, "--image-store", store, "--summary", sum)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i, r := range readJSONL(t, out) {
		if got, _ := json.Marshal(r["reward"]); string(got) != "[1]" {
			t.Errorf("row %d: reward %s (%v)", i, got, r["reward_error"])
		}
	}
	if !strings.Contains(stderr, "pulling image "+refs[0]) {
		t.Errorf("the pull is not announced:\n%s", stderr)
	}
	if !strings.Contains(stdout+stderr, "images: 2 (2 pulled from registries: ") ||
		!strings.Contains(stdout+stderr, "2 of 5 layers already in the store)") {
		t.Errorf("the summary does not tell the pulls and the shared base:\n%s\n%s", stdout, stderr)
	}
	s := summary(sum)
	if s.Provenance == nil || len(s.Provenance.Images) != 2 {
		t.Fatalf("the provenance lists no images: %+v", s.Provenance)
	}
	// The two pull at once, so either may fetch the base: together they
	// fetch the larger image's bytes once.
	var fetched, shared int64
	var plusBytes int64
	for _, im := range s.Provenance.Images {
		if im.Source != "registry" || im.Digest != digests[im.Ref].String() {
			t.Errorf("provenance %+v; want pulled from the registry at %s", im, digests[im.Ref])
		}
		fetched, shared = fetched+im.Fetched, shared+int64(im.Shared)
		if im.Ref == refs[1] {
			plusBytes = im.Bytes
		}
	}
	if fetched != plusBytes || shared != 2 {
		t.Errorf("the two images fetched %d bytes with %d layers shared; want %d (the base once) and 2", fetched, shared,
			plusBytes)
	}

	// the registry gone, the store has them
	srv.Close()
	out2, sum2 := filepath.Join(dir, "out2.jsonl"), filepath.Join(dir, "sum2.json")
	code, stdout, stderr = run(context.Background(), "run", in, "-o", out2, "--image-store", store, "--summary", sum2,
		"--pull", "never")
	if code != ExitOK {
		t.Fatalf("run from the store: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i, r := range readJSONL(t, out2) {
		if got, _ := json.Marshal(r["reward"]); string(got) != "[1]" {
			t.Errorf("from the store, row %d: reward %s (%v)", i, got, r["reward_error"])
		}
	}
	for _, im := range summary(sum2).Provenance.Images {
		if im.Source != "store" || im.Digest != digests[im.Ref].String() {
			t.Errorf("from the store: %+v", im)
		}
	}

	// a store over its bound: the run evicts the image it does not use,
	// never the one it does
	out4 := filepath.Join(dir, "out4.jsonl")
	code, _, stderr = run(context.Background(), "run", rows(refs[0]), "-o", out4, "--image-store", store,
		"--pull", "never", "--image-store-max-gb", "0.001")
	if code != ExitOK || !strings.Contains(stderr, "evicted 1 least recently used images") {
		t.Errorf("a run over the store's bound: exit %d\n%s", code, stderr)
	}
	st, err := image.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Pulled(refs[0]); !ok {
		t.Error("the image the run used was evicted")
	}
	if _, ok := st.Pulled(refs[1]); ok {
		t.Error("the image the run did not use was kept over the bound")
	}
	if got, _ := json.Marshal(readJSONL(t, out4)[0]["reward"]); string(got) != "[1]" {
		t.Errorf("the run over the bound scored %s", got)
	}

	// an image in no registry, no --images and not in the store
	out3 := filepath.Join(dir, "out3.jsonl")
	code, _, stderr = run(context.Background(), "run", rows(host+"/fixture/absent:1"), "-o", out3, "--image-store",
		store, "--pull", "never")
	if code == ExitOK {
		t.Errorf("a run whose every row lacks its image succeeded:\n%s", stderr)
	}
	r := readJSONL(t, out3)[0]
	if cr, _ := json.Marshal(r["case_results"]); string(cr) != "[[-1,-1]]" ||
		!strings.Contains(stderr, "image not found: "+host+"/fixture/absent:1") ||
		!strings.Contains(stderr, "--pull never") {
		t.Errorf("an image found nowhere: case_results %s; want -1, infrastructure, naming it\n%s", cr, stderr)
	}
}

// TestTwoRunsShareOneStore: two run processes and a serve at once on one
// fresh store, their rollouts naming one image in a registry on loopback:
// each layer is fetched once, the image unpacked once (the others wait for
// it and say so), and each scores every rollout.
func TestTwoRunsShareOneStore(t *testing.T) {
	_, images := sweDataset(t, nil, nil)
	calc := calcImage(t, images)
	var mu sync.Mutex
	gets := map[string]int{}
	inner := quietRegistry()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			mu.Lock()
			gets[r.URL.Path]++
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/fixture/calc:2"
	pushImage(t, ref, calc)
	inst := imagetest.CalcFixture(t).Instance()
	inst["image"] = ref
	row := calcRow(t, "swe-fixture", ref, imagetest.CalcGoldPatch, imagetest.CalcGoldPatch)
	dir := t.TempDir()
	in := writeFile(t, dir, "rows.jsonl", row+row)
	store := filepath.Join(dir, "store")
	bin := buildBinary(t)
	// a serve process on the same store, sent the same rollout meanwhile
	serveURL, serveLog := startNodeLogged(t, bin, "--image-store", store)
	served := make(chan string, 1)
	go func() {
		body, _ := json.Marshal(sandboxclient.SWERequest{Instance: inst, Patch: imagetest.CalcGoldPatch})
		resp, err := http.Post(strings.TrimSuffix(serveURL, "/run_code")+sandboxclient.SWEPath, "application/json",
			bytes.NewReader(body))
		if err != nil {
			served <- err.Error()
			return
		}
		defer resp.Body.Close()
		var r sandboxclient.SWEResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			served <- err.Error()
			return
		}
		served <- r.Outcome
	}()
	var runs [2]*exec.Cmd
	var errs [2]bytes.Buffer
	for i := range runs {
		runs[i] = exec.Command(bin, "run", in, "-o", filepath.Join(dir, fmt.Sprintf("out%d.jsonl", i)), "--image-store",
			store)
		runs[i].Stderr = &errs[i]
		if err := runs[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range runs {
		if err := c.Wait(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, errs[i].String())
		}
		for j, r := range readJSONL(t, filepath.Join(dir, fmt.Sprintf("out%d.jsonl", i))) {
			if got, _ := json.Marshal(r["reward"]); string(got) != "[1,1]" {
				t.Errorf("run %d, row %d: reward %s (%v)", i, j, got, r["reward_error"])
			}
		}
	}
	if o := <-served; o != "resolved" {
		t.Errorf("serve on the same store: %s", o)
	}
	unpacked := 0
	for _, said := range []string{errs[0].String(), errs[1].String(), serveLog()} {
		if strings.Contains(said, "image "+ref+" unpacked: ") {
			unpacked++
		}
	}
	if unpacked != 1 {
		t.Errorf("%d processes unpacked the image; want 1\n%s\n%s\n%s", unpacked, errs[0].String(), errs[1].String(),
			serveLog())
	}
	ls, _ := calc.Layers()
	for _, l := range ls {
		d, _ := l.Digest()
		mu.Lock()
		n := gets["/v2/fixture/calc/blobs/"+d.String()]
		mu.Unlock()
		if n != 1 {
			t.Errorf("layer %s fetched %d times; want once", d, n)
		}
	}
	st, err := image.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.List()
	if err != nil || len(u.Images) != 1 {
		t.Errorf("the store holds %v (%v); want the one image", u, err)
	}
}
