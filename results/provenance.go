package results

// Provenance says how an output was made: by which build, when, where,
// with which settings (secrets redacted) and against which sandbox. run
// puts it in the summary JSON (provenance), in a parquet output's
// key-value metadata (ProvenanceKey) and as the first line of the cases
// file ({"provenance": ...}).
type Provenance struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Started string `json:"started"` // RFC 3339, UTC
	Host    string `json:"host"`
	// Settings are every configuration key with its value (redacted where
	// it may hold a secret) and where the value came from.
	Settings map[string]Setting `json:"settings"`
	// Sandbox is the sandbox the run scored with: the embedded one and its
	// isolation, or the endpoints (redacted).
	Sandbox string `json:"sandbox"`
	// Toolchains are the embedded sandbox's programs for the languages the
	// run used, with their versions; filled when the run ends.
	Toolchains []Toolchain `json:"toolchains,omitempty"`
	// Images are the repository tasks' images the run used; filled when
	// the run ends.
	Images []Image `json:"images,omitempty"`
}

// Image is one image a run's repository tasks used.
type Image struct {
	// Ref is the name rows gave it.
	Ref string `json:"ref"`
	// Source: the --images layout or archive, the path a row named,
	// "registry" (pulled in this run) or "store" (pulled before).
	Source string `json:"source"`
	// Digest is a pulled image's manifest digest; ID the store's (its
	// configuration's digest).
	Digest string `json:"digest,omitempty"`
	ID     string `json:"id"`
	// Of a pull in this run: the layers' bytes, those fetched, and the
	// layers that were in the store already.
	Bytes   int64 `json:"bytes,omitempty"`
	Fetched int64 `json:"fetched,omitempty"`
	Layers  int   `json:"layers,omitempty"`
	Shared  int   `json:"shared_layers,omitempty"`
}

// Setting is one configuration value and its source (flag, env, file,
// default).
type Setting struct {
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// Toolchain is one program of the embedded sandbox.
type Toolchain struct {
	Language string `json:"language"`
	Program  string `json:"program"`
	Path     string `json:"path"`
	Version  string `json:"version"`
}
