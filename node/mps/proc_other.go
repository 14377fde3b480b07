//go:build !linux

package mps

// supported: MPS runs on Linux only; elsewhere New returns ErrNoMPS.
const supported = false

func running(int) bool { return false }
