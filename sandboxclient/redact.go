package sandboxclient

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// redacted replaces a credential wherever one would be printed.
const redacted = "REDACTED"

// RedactURL returns raw fit to print: user information (user:password@, or
// a token as user name) and every query value are replaced, since gateways
// take credentials in either place. A URL that does not parse is not
// printed at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{redacted}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ParseHeader reads a --sandbox-header value, "Name: value". $VAR and
// ${VAR} in the value are replaced from the environment, so that a token
// need not be written in a config file or a process listing.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return "", "", fmt.Errorf("sandbox header %q: want \"Name: value\"", RedactHeader(s))
	}
	value = os.ExpandEnv(strings.TrimSpace(value))
	return http.CanonicalHeaderKey(name), value, nil
}

// RedactHeader returns a "Name: value" header fit to print: the name only.
func RedactHeader(s string) string {
	name, _, ok := strings.Cut(s, ":")
	if !ok {
		return redacted
	}
	return strings.TrimSpace(name) + ": " + redacted
}
