//go:build linux

// Package e2e holds the end-to-end tests of labpool: real agents in network
// namespaces joined by a bridge, the browser UI driven by Playwright, and the
// desktop window under Xvfb. The tests need root, iproute2 and a built
// binary; they skip with a clear message elsewhere, but never under CI=true.
package e2e
