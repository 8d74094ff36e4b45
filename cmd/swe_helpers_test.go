//go:build linux

package cmd

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/image/imagetest"
)

// calcImage is the fixture's image, read from the --images directory
// sweDataset gives.
func calcImage(t testing.TB, images string) v1.Image {
	t.Helper()
	cat, err := image.OpenCatalog(images)
	if err != nil {
		t.Fatal(err)
	}
	e, err := cat.Find(imagetest.CalcRef)
	if err != nil {
		t.Fatal(err)
	}
	img, err := e.Open()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// calcRow is a JSON line of a row of the fixture's instance, its image
// named ref, with these responses.
func calcRow(t testing.TB, source, ref string, responses ...string) string {
	t.Helper()
	inst := imagetest.CalcFixture(t).Instance()
	inst["image"] = ref
	gt, _ := json.Marshal(inst)
	row, err := json.Marshal(map[string]any{"data_source": source, "responses": responses,
		"reward_model": map[string]any{"ground_truth": string(gt)}})
	if err != nil {
		t.Fatal(err)
	}
	return string(row) + "\n"
}

// quietRegistry is go-containerregistry's registry with its log off.
func quietRegistry() http.Handler { return registry.New(registry.Logger(log.New(io.Discard, "", 0))) }

// pushImage writes img to a registry as ref.
func pushImage(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}
