package containers

// statusError is a sentinel error of this package that the API answers
// with its own HTTP status and code (jobs.Reply reads HTTPStatus).
type statusError struct {
	msg    string
	status int
	code   string
}

func (e *statusError) Error() string { return e.msg }

// HTTPStatus is the status and code the API answers e with.
func (e *statusError) HTTPStatus() (int, string) { return e.status, e.code }
