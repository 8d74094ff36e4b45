package sandboxclient

// APIError is a request that got no usable response: a transport error, a
// non-2xx status after the retries allowed, or a body that is not JSON.
type APIError struct {
	Attempts   int   // HTTP requests made
	StatusCode int   // last HTTP status, 0 if none was received
	Err        error // what went wrong last
}

func (e *APIError) Error() string { return "api call failed: " + e.Err.Error() }

func (e *APIError) Unwrap() error { return e.Err }
