package image

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// ParseRegistryAuth reads one --registry-auth value: "HOST=USER:PASSWORD"
// (basic credentials, which the registry may trade for a token) or
// "HOST=Bearer TOKEN" (a registry token), $VAR taken from the environment,
// so that a secret need not be on the command line.
func ParseRegistryAuth(s string) (host string, auth authn.Authenticator, err error) {
	host, cred, ok := strings.Cut(s, "=")
	host = strings.TrimSpace(host)
	if !ok || host == "" || strings.ContainsAny(host, " \t/") {
		return "", nil, fmt.Errorf("registry auth %q: want HOST=USER:PASSWORD or HOST=Bearer TOKEN",
			RedactRegistryAuth(s))
	}
	cred = os.ExpandEnv(strings.TrimSpace(cred))
	if tok, ok := strings.CutPrefix(cred, "Bearer "); ok {
		if tok = strings.TrimSpace(tok); tok == "" {
			return "", nil, fmt.Errorf("registry auth for %s: an empty token (is its variable set?)", host)
		}
		return host, &authn.Bearer{Token: tok}, nil
	}
	user, password, ok := strings.Cut(cred, ":")
	if !ok || user == "" || password == "" {
		return "", nil, fmt.Errorf("registry auth for %s: want USER:PASSWORD or Bearer TOKEN (is a variable unset?)",
			host)
	}
	return host, &authn.Basic{Username: user, Password: password}, nil
}

// RedactRegistryAuth is a --registry-auth value fit to print: the host only.
func RedactRegistryAuth(s string) string {
	host, _, ok := strings.Cut(s, "=")
	if !ok {
		return "[redacted]"
	}
	return strings.TrimSpace(host) + "=[redacted]"
}
