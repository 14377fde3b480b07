package cli

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alloc"
)

// TestGPUsNamesEveryShareHolder: a GPU two jobs hold halves of lists both
// in gpus's JOB column, not only the one its reading names; a GPU held
// whole keeps its job's label.
func TestGPUsNamesEveryShareHolder(t *testing.T) {
	job := func(id, name string, share float64, units ...string) alloc.Grant {
		return alloc.Grant{Holder: alloc.Holder{Kind: alloc.Job, ID: id, Name: name}, Units: units, Share: share}
	}
	nodes := []app.Node{{ID: "n1", Name: "gpu1", Alloc: &app.Allocation{Grants: []alloc.Grant{
		job("j1", "half-a", 0.5, "GPU-0"), job("j2", "half-b", 0.5, "GPU-0"), job("j3", "whole", 0, "GPU-1"),
	}}}}
	gpus := []app.GPU{
		{NodeName: "gpu1", Index: 0, UUID: "GPU-0", Job: "j2", JobName: "half-b", JobOwnerName: "laptop"},
		{NodeName: "gpu1", Index: 1, UUID: "GPU-1", Job: "j3", JobName: "whole", JobOwnerName: "laptop"},
	}
	var b strings.Builder
	if err := writeGPUsShared(&b, gpus, shareHolders(nodes)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[1]), "half-a 50%, half-b 50%") {
		t.Errorf("GPU 0's line %q; want both holders and their shares", lines[1])
	}
	if !strings.HasSuffix(strings.TrimSpace(lines[2]), "whole (laptop)") {
		t.Errorf("GPU 1's line %q; want its job", lines[2])
	}
}
