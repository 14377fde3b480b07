package containers

import (
	"testing"

	"github.com/docker/docker/api/types/container"
)

// TestFromInspectRestarts: the engine's restart count of a container
// (--restart on-failure) reaches the job, which shows it in ps and the
// Jobs view.
func TestFromInspectRestarts(t *testing.T) {
	ins := container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: "c1", RestartCount: 3,
		State: &container.State{Status: "running", Running: true}}}
	if c := fromInspect(ins); c.Restarts != 3 {
		t.Errorf("restarts %d, want 3", c.Restarts)
	}
	e := &Executor{stopped: map[string]bool{}}
	if st := e.status(Container{ID: "c1", Running: true, Restarts: 3}); st.Restarts != 3 {
		t.Errorf("task restarts %d, want 3", st.Restarts)
	}
}
