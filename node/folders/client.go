package folders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// HTTPSource reads a shared folder of another machine through Handler,
// for a copy this machine receives. Every request carries Grant, the
// authority of the member who asked for the copy.
type HTTPSource struct {
	Client *http.Client // reaches the source machine at https://node/
	Folder string
	Grant  string // an encoded, signed Grant
}

// url is the address of a request of r on the share, with the query q.
func (s HTTPSource) url(r peerapi.Spec, q url.Values) (string, error) {
	p, err := r.URL([]string{s.Folder}, q)
	return "https://node" + p, err
}

// do sends a request and returns the response of a 200, or the source's
// refusal as an error.
func (s HTTPSource) do(ctx context.Context, r peerapi.Spec, q url.Values, body []byte) (*http.Response, error) {
	u, err := s.url(r, q)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set(GrantHeader, s.Grant)
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, sourceError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		e := httperr.Read(resp)
		if e.Message == "" {
			e.Message = resp.Status
		}
		return nil, fmt.Errorf("%s", e.Message)
	}
	return resp, nil
}

// ReadEnd reads the end of a response body whose content was all read:
// the body must end there. Reading its end is what lets the HTTP/1.1 data
// path reuse the connection: a body closed before its end closes the
// connection too, and every request then paid a TCP and TLS handshake
// (and spent the source's handshake budget, after which copies fell back
// to QUIC).
func ReadEnd(body io.Reader) error {
	var b [512]byte
	for {
		n, err := body.Read(b[:])
		switch {
		case len(bytes.TrimSpace(b[:n])) > 0: // a JSON body ends in a newline

			return errors.New("the source sent more than was asked for")
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// ErrNoAnswer means a request to the sending machine got no answer: it
// could not be reached, or the connection was lost before it answered.
var ErrNoAnswer = errors.New("the sending machine did not answer")

// sourceError says that the sending machine could not be reached, without
// the request's URL.
func sourceError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w: %w", ErrNoAnswer, err)
}

// CloseIdleConnections drops the connections kept for the next request,
// for a copy that asks again after its network changed.
func (s HTTPSource) CloseIdleConnections() { s.Client.CloseIdleConnections() }

// Walk implements Source: emit has each item as the listing arrives.
func (s HTTPSource) Walk(ctx context.Context, p string, emit func(FileMeta) error) error {
	resp, err := s.do(ctx, routeWalk.Spec, url.Values{"path": {p}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return DecodeWalkFunc(resp.Body, emit)
}

// Sums implements Source.
func (s HTTPSource) Sums(ctx context.Context, p string) (Sums, error) {
	var sums Sums
	resp, err := s.do(ctx, routeSums.Spec, url.Values{"path": {p}}, nil)
	if err != nil {
		return sums, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, 256<<20))
	if err := dec.Decode(&sums); err != nil {
		return sums, err
	}
	return sums, ReadEnd(io.MultiReader(dec.Buffered(), resp.Body)) // what is left is its newline
}

// Bundle implements Source.
func (s HTTPSource) Bundle(ctx context.Context, paths []string) (io.ReadCloser, error) {
	body, err := json.Marshal(bundleRequest{Paths: paths})
	if err != nil {
		return nil, err
	}
	resp, err := s.do(ctx, routeBundle.Spec, nil, body)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return resp.Body, nil
}

// BlockCheckName asks a blocks request for BlockCheck rather than BlockSum
// (check=crc32c); a source that predates it sends BlockSums.
const BlockCheckName = "crc32c"

// Blocks implements Source: the blocks come with their BlockCheck.
func (s HTTPSource) Blocks(ctx context.Context, p string, first, n int) (io.ReadCloser, error) {
	q := url.Values{"path": {p}, "first": {strconv.Itoa(first)}, "n": {strconv.Itoa(n)}, "check": {BlockCheckName}}
	resp, err := s.do(ctx, routeBlocks.Spec, q, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Read implements Source.
func (s HTTPSource) Read(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	resp, err := s.do(ctx, routeRead.Spec, url.Values{"path": {p}, "off": {strconv.FormatInt(off, 10)}, "len": {strconv.FormatInt(n, 10)}}, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
