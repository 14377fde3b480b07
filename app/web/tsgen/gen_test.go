package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGeneratedFileIsCurrent fails when the Go types of the local API
// changed and frontend/src/api/types.gen.ts was not regenerated (make gen).
func TestGeneratedFileIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../../../frontend/src/api/types.gen.ts")
	if err != nil {
		t.Fatal(err)
	}
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(b), src); diff != "" {
		t.Errorf("types.gen.ts is stale, run make gen (-file +generated):\n%s", diff)
	}
}
