//go:build linux

package containers

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/mps"
)

// TestShareOnARealEngine: on a real Docker engine, with the agent's MPS
// daemons (node/mps over its fake control program), a container with a
// share sees the daemon's shm directory as its /dev/shm and can write its
// pipe directory as the jobs' user, in an IPC namespace that is not the
// host's, with its share's variables.
func TestShareOnARealEngine(t *testing.T) {
	r := openRuntime(t)
	if r.RemapsUsers() {
		t.Skip("this engine remaps users: shares are time-sliced here")
	}
	bin, err := filepath.Abs("../mps/testdata/nvidia-cuda-mps-control")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_MPS_LOG", filepath.Join(t.TempDir(), "calls"))
	t.Setenv("FAKE_MPS_NO_STATIC", "1")
	cfg := mps.DefaultConfig(filepath.Join(t.TempDir(), "mps"))
	cfg.Binary, cfg.PrivateShm = bin, os.Geteuid() == 0
	uid, gid, _ := strings.Cut(DefaultJobUser, ":")
	cfg.UID, _ = strconv.Atoi(uid)
	cfg.GID, _ = strconv.Atoi(gid)
	d, err := mps.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := NewExecutor(r, ExecutorConfig{MPS: d})
	task := jobs.Task{ID: "5ca1ab1e5ca1ab1e", Name: "share", Image: dockertest.Image, GPUs: []string{"GPU-aaaa-0001"}, GPUShare: 0.5, GPUMemBytes: 4 << 30,
		Cmd:    []string{"sh", "-c", `stat -c 'shm=%d:%i' /dev/shm; touch "$CUDA_MPS_PIPE_DIRECTORY/x" && echo pipe=writable; echo "ipc=$(readlink /proc/self/ns/ipc)"; env | grep ^CUDA_MPS_ | sort`},
		Labels: map[string]string{LabelJob: "5ca1ab1e5ca1ab1e", LabelOwner: "test"}}
	l := ex.launch(task)
	if err := ex.arrangeShare(context.Background(), task, &l); err != nil {
		t.Fatal(err)
	}
	defer d.Release(context.Background(), "GPU-aaaa-0001", task.ID)
	l.GPUs = nil // no NVIDIA runtime on the test engine: the arrangement is what is checked
	out := runToEnd(t, r, l)
	t.Logf("the container said:\n%s", out)

	var st syscall.Stat_t
	shm := filepath.Join(cfg.Dir, "GPU-aaaa-0001", "shm")
	if err := syscall.Stat(shm, &st); err != nil {
		t.Fatal(err)
	}
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	for _, want := range []string{
		"shm=" + strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10),
		"pipe=writable",
		"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50",
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M",
		"CUDA_MPS_PIPE_DIRECTORY=" + filepath.Join(cfg.Dir, "GPU-aaaa-0001", "pipe"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the container said:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(out, "ipc="+hostIPC+"\n") {
		t.Errorf("the container is in the host's IPC namespace (%s)", hostIPC)
	}
}
