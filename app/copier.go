package app

import (
	"context"
	"errors"
	"time"

	"github.com/labpool/labpool/node/folders/copies"
)

// CopierOf is the copy engine r as the service's Copier: its refusals
// carry the service's sentinels.
func CopierOf(r *copies.Receiver) Copier { return copier{r} }

// copier adapts the copy engine to Copier.
type copier struct{ r *copies.Receiver }

// Copy implements Copier.
func (c copier) Copy(ctx context.Context, req CopyRequest) (Transfer, error) {
	t, err := c.r.Copy(ctx, copies.Request(req))
	return t, copyError(err)
}

// Transfer implements Copier.
func (c copier) Transfer(ctx context.Context, node, id string, wait time.Duration) (Transfer, error) {
	t, err := c.r.Transfer(ctx, node, id, wait)
	return t, copyError(err)
}

// Transfers implements Copier.
func (c copier) Transfers(ctx context.Context) ([]Transfer, error) {
	list, err := c.r.Transfers(ctx)
	return list, copyError(err)
}

// copyError is a refusal of the copy engine as the service's sentinel,
// with the same text, so that the local API answers with its code.
func copyError(err error) error {
	switch {
	case errors.Is(err, copies.ErrNotFound):
		return copyKindError{ErrNotFound, err}
	case errors.Is(err, copies.ErrInvalid):
		return copyKindError{ErrInvalid, err}
	}
	return err
}

// copyKindError is err, also matching kind.
type copyKindError struct{ kind, err error }

func (e copyKindError) Error() string   { return e.err.Error() }
func (e copyKindError) Unwrap() []error { return []error{e.kind, e.err} }
