package jobs

import (
	"errors"
	"fmt"
	"testing"
)

// TestIsGone wants a vanished container known by the engine's typed
// not-found error, wrapped or not, and never by the text of an error.
func TestIsGone(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"not found", noContainer("abc"), true},
		{"wrapped", fmt.Errorf("stop container abc: %w", noContainer("abc")), true},
		{"text only", errors.New("No such container: abc"), false},
		{"other", errors.New("engine on fire"), false},
	}
	for _, tt := range tests {
		if got := isGone(tt.err); got != tt.want {
			t.Errorf("isGone(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
