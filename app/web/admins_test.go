package web

import (
	"strings"
	"testing"
)

// TestAdminsUnknownGroup: a system agent whose group is missing does not
// start, and says how to make it.
func TestAdminsUnknownGroup(t *testing.T) {
	_, err := LookupAdmins("labpool-no-such-group")
	if err == nil || !strings.Contains(err.Error(), "groupadd --system labpool-no-such-group") {
		t.Fatalf("err = %v, want one naming groupadd", err)
	}
}
