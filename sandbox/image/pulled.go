package image

import (
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// PullOptions say how to reach registries.
type PullOptions struct {
	// Auth are credentials by registry host ("ghcr.io"), tried before
	// Keychain.
	Auth map[string]authn.Authenticator
	// Keychain finds the rest; nil is Docker's configuration
	// ($DOCKER_CONFIG, ~/.docker/config.json and its helpers).
	Keychain authn.Keychain
	// Transport carries the requests; nil is go-containerregistry's default.
	Transport http.RoundTripper
	// Platform is the image an index is resolved to; zero is linux on this
	// machine's architecture.
	Platform v1.Platform
	// Attempts bounds the tries of each blob (an interrupted one resumes);
	// 0 is 4.
	Attempts int
	// Progress, if set, is told the bytes fetched as they arrive.
	Progress func(bytes int64)
}

// A Pulled image is one reference fetched into the store.
type Pulled struct {
	Ref    string  `json:"ref"` // in full: "index.docker.io/library/python:3.11"
	Digest v1.Hash `json:"digest"`
	// Layers is the image's layer count; Shared of them were in the store
	// already (another image's, or an interrupted pull's).
	Layers int `json:"layers"`
	Shared int `json:"shared_layers"`
	// Bytes is the size of its layers as the registry holds them
	// (compressed); Fetched what this pull downloaded of them.
	Bytes   int64     `json:"bytes"`
	Fetched int64     `json:"fetched"`
	Pulled  time.Time `json:"pulled"`
	// Dir is its layout in the store.
	Dir string `json:"-"`
}

// Image reads the pulled image from the store.
func (p *Pulled) Image() (v1.Image, error) {
	lp, err := layout.FromPath(p.Dir)
	if err != nil {
		return nil, err
	}
	return lp.Image(p.Digest)
}
