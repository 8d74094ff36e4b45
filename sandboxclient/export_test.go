package sandboxclient

// The package's tests are external (they judge answers with package judge,
// which imports this one); these give them the internals they check.

var (
	AttemptTimeout = attemptTimeout
	IsOverload     = isOverload
)

// SetMaxBody lowers c's cap on a response body.
func SetMaxBody(c *HTTPClient, n int64) { c.maxBody = n }

// NeverAnsweredLimit is neverAnsweredLimit, for the tests.
const NeverAnsweredLimit = neverAnsweredLimit
