package slurm

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func testPlan(containers ...string) batchPlan {
	return batchPlan{
		Comment:    "labpool:job=j1,owner=DEV1",
		Output:     "/home/lab/.labpool/slurm/slurm-%j.out",
		Dir:        "/home/lab/.labpool/slurm",
		Containers: containers,
		Apptainer:  "apptainer",
	}
}

func TestGoldenScripts(t *testing.T) {
	mounts := []jobs.TaskMount{
		{HostPath: "/srv/share/imagenet", Target: "/data/imagenet", ReadOnly: true},
		{HostPath: "/srv/share/runs", Target: "/runs"},
	}
	tests := []struct {
		name       string
		task       jobs.Task
		containers []string
	}{
		{"command", jobs.Task{ID: "j1", Name: "echo gpus", Owner: "DEV1",
			Cmd: []string{"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}, Env: []string{"SEED=1"}, Mounts: mounts,
			Resources: jobs.Resources{GPUs: 2, CPUs: 1.5, MemoryBytes: 3<<30 + 1, TimeLimit: 90*time.Minute + time.Second, Partition: "gpu"}}, nil},
		{"pyxis", jobs.Task{ID: "j1", Name: "train", Owner: "DEV1", Image: "pytorch:24.01-py3",
			Cmd: []string{"python", "train.py", "--lr", "3e-4"}, Env: []string{"WANDB_MODE=offline"}, Mounts: mounts,
			Resources: jobs.Resources{GPUs: 8, CPUs: 32, MemoryBytes: 256 << 30}}, []string{Pyxis, Apptainer}},
		{"apptainer", jobs.Task{ID: "j1", Name: "notebook", Owner: "DEV1", Image: "jupyter/base-notebook",
			Cmd: []string{"jupyter", "lab", "--port=8888"}, Mounts: mounts, Ports: []int{8888},
			Resources: jobs.Resources{GPUs: 1}}, []string{Apptainer}},
		{"multinode", jobs.Task{ID: "j1", Name: "ddp", Owner: "DEV1",
			Cmd:       []string{"torchrun", "--nnodes=2", "train.py"},
			Resources: jobs.Resources{Nodes: 2, GPUsPerNode: 4, CPUs: 16, TimeLimit: 2 * time.Hour}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := buildBatch(tt.task, testPlan(tt.containers...))
			if err != nil {
				t.Fatal(err)
			}
			got := "# sbatch " + strings.Join(b.Args, " \\\n#   ") + "\n" + b.Script
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", tt.name, path, got)
			}
		})
	}
}

// hostile are strings a member could put in a job's name, command or
// environment, trying to run something else.
var hostile = []string{
	`'; touch INJECTED; '`,
	`$(touch INJECTED)`,
	"`touch INJECTED`",
	"a\ntouch INJECTED\n",
	`"; touch INJECTED; "`,
	`\'; touch INJECTED #`,
	`${IFS}touch${IFS}INJECTED`,
	"--comment=labpool:job=other,owner=other",
}

// TestScriptInjection runs the written scripts with sh, in the
// environment sbatch is given: every hostile string arrives as one
// argument or value, verbatim, and nothing else runs.
func TestScriptInjection(t *testing.T) {
	for i, h := range hostile {
		dir := t.TempDir()
		task := jobs.Task{ID: "j1", Owner: "DEV1", Name: h,
			Cmd: []string{"sh", "-c", `printf '%s\n' "$1" "$HOSTILE" > out`, "sh", h},
			Env: []string{"HOSTILE=" + h}}
		b, err := buildBatch(task, testPlan())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range b.Args {
			if strings.HasPrefix(a, "--job-name=") && strings.ContainsAny(a, "\n") {
				t.Errorf("case %d: job name keeps a newline: %q", i, a)
			}
		}
		script := filepath.Join(dir, "job.sh")
		if err := os.WriteFile(script, []byte(b.Script), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", script)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, b.Env...) // sbatch's environment, which --export names
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: %v: %s", i, err, out)
		}
		out, err := os.ReadFile(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		if want := h + "\n" + h + "\n"; string(out) != want {
			t.Errorf("case %d: the job saw %q, want %q", i, out, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "INJECTED")); err == nil {
			t.Errorf("case %d: %q ran a command", i, h)
		}
	}
}

// TestEnvRules: a job cannot set Slurm's variables, labpool's, the GPUs
// Slurm grants, nor sbatch's input variables (its values are in
// sbatch's environment: SBATCH_GRES would ask GPUs past the policy),
// nor a name that is not a variable.
func TestEnvRules(t *testing.T) {
	for _, kv := range []string{"SLURM_JOB_ID=1", "SLURMD_NODENAME=x", "CUDA_VISIBLE_DEVICES=0,1,2,3", "LABPOOL_JOB=other",
		"SBATCH_GRES=gpu:8", "SBATCH_EXPORT=ALL", "SALLOC_PARTITION=x", "SRUN_CPUS_PER_TASK=1",
		"A B=1", "=1", "NOEQUALS", "1X=2", "X;touch INJECTED=1"} {
		_, err := buildBatch(jobs.Task{ID: "j1", Owner: "DEV1", Cmd: []string{"true"}, Env: []string{kv}}, testPlan())
		if err == nil {
			t.Errorf("env %q accepted", kv)
		}
	}
}

func TestBatchRefusals(t *testing.T) {
	tests := []struct {
		name string
		task jobs.Task
		want error
	}{
		{"image without runtime", jobs.Task{ID: "j1", Owner: "o", Image: "ubuntu"}, ErrNoContainerRuntime},
		{"no command", jobs.Task{ID: "j1", Owner: "o"}, nil},
		{"gpus in all on nodes", jobs.Task{ID: "j1", Owner: "o", Cmd: []string{"x"}, Resources: jobs.Resources{Nodes: 2, GPUs: 4}}, nil},
		{"bad partition", jobs.Task{ID: "j1", Owner: "o", Cmd: []string{"x"}, Resources: jobs.Resources{Partition: "gpu --wrap=x"}}, nil},
		{"negative", jobs.Task{ID: "j1", Owner: "o", Cmd: []string{"x"}, Resources: jobs.Resources{CPUs: -1}}, nil},
	}
	for _, tt := range tests {
		_, err := buildBatch(tt.task, testPlan())
		if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	mount := []jobs.TaskMount{{HostPath: "/srv/a,b", Target: "/data"}}
	if _, err := buildBatch(jobs.Task{ID: "j1", Owner: "o", Image: "x", Cmd: []string{"x"}, Mounts: mount}, testPlan(Pyxis)); err == nil {
		t.Error("a mount path with ',' was accepted for pyxis")
	}
	if _, err := buildBatch(jobs.Task{ID: "j1", Owner: "o", Cmd: []string{"x"}, Mounts: mount}, testPlan()); err != nil {
		t.Errorf("a command job's folder (an env value) was refused: %v", err)
	}
}
