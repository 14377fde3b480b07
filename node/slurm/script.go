package slurm

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/jobs"
)

// How an image runs on a cluster.
const (
	Pyxis     = "pyxis"     // srun --container-image (NVIDIA's pyxis + enroot)
	Apptainer = "apptainer" // apptainer exec (or singularity exec)
)

// ErrNoContainerRuntime means that a task names an image and the cluster
// has neither pyxis nor Apptainer/Singularity.
var ErrNoContainerRuntime = errors.New("slurm: an image job needs pyxis (srun --container-image) or Apptainer/Singularity on the cluster, and this cluster has neither: run a command job (no image)")

// batch is what one Start submits: the script (on sbatch's standard
// input), sbatch's arguments, and the job's environment (sbatch's own
// environment, which --export names: a value is in neither the script
// nor argv, where every user of the submit host could read it).
type batch struct {
	Script string
	Args   []string
	Env    []string
}

// batchPlan is what buildBatch needs beside the task.
type batchPlan struct {
	Comment    string   // the labpool marker
	Output     string   // --output, with %j
	Dir        string   // --chdir
	Containers []string // runtimes the cluster has, preferred first
	Apptainer  string   // the apptainer or singularity binary
}

// buildBatch turns a task into a batch script, sbatch's arguments and
// the job's environment. Nothing of the task reaches a shell unquoted:
// the command's words are single-quoted in the script, sbatch's
// arguments are argv entries, and values stay in the environment.
func buildBatch(t jobs.Task, p batchPlan) (batch, error) {
	if !validID(t.ID) || !validID(t.Owner) {
		return batch{}, fmt.Errorf("slurm: job %q of %q: job and owner IDs are 1 to %d of [A-Za-z0-9._-]", t.ID, t.Owner, maxIDLen)
	}
	runtime, err := pickRuntime(t.Image, p.Containers)
	if err != nil {
		return batch{}, err
	}
	env, err := taskEnv(t, runtime)
	if err != nil {
		return batch{}, err
	}
	args, err := sbatchArgs(t, p, env)
	if err != nil {
		return batch{}, err
	}
	run, err := runLine(t, runtime, p)
	if err != nil {
		return batch{}, err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# labpool job %s, launched by %s. Written by labpool: every word below is quoted.\n", t.ID, t.Owner)
	b.WriteString("# srun steps get the job's environment (sbatch exported only the names it was given).\n")
	b.WriteString("export SLURM_EXPORT_ENV=ALL\n")
	b.WriteString(run + "\n")
	return batch{Script: b.String(), Args: args, Env: env}, nil
}

// pickRuntime chooses how to run image: "" for a command job.
func pickRuntime(image string, have []string) (string, error) {
	if image == "" {
		return "", nil
	}
	if len(have) == 0 {
		return "", ErrNoContainerRuntime
	}
	return have[0], nil
}

// sbatchArgs are sbatch's options for t, whose environment is env:
// --export names its variables (their values are in sbatch's
// environment), so the job gets those and Slurm's, never sbatch's others.
func sbatchArgs(t jobs.Task, p batchPlan, env []string) ([]string, error) {
	r := t.Resources
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	args := []string{"--parsable", "--export=" + strings.Join(names, ","),
		"--job-name=" + jobName(t), "--comment=" + p.Comment,
		"--output=" + p.Output, "--chdir=" + p.Dir}
	res, err := resourceArgs(r)
	if err != nil {
		return nil, err
	}
	return append(args, res...), nil
}

// resourceArgs are sbatch's options for what r asks: the partition, the
// nodes and GPUs, CPUs, memory and the time limit. The plan shows these
// (SbatchArgs).
func resourceArgs(r jobs.Resources) ([]string, error) {
	var args []string
	if r.Partition != "" {
		if !validID(r.Partition) {
			return nil, fmt.Errorf("slurm: partition %q: a partition name is 1 to %d of [A-Za-z0-9._-]", r.Partition, maxIDLen)
		}
		args = append(args, "--partition="+r.Partition)
	}
	gres, err := gpuArgs(r)
	if err != nil {
		return nil, err
	}
	args = append(args, gres...)
	if r.CPUs < 0 || r.MemoryBytes < 0 || r.TimeLimit < 0 {
		return nil, errors.New("slurm: CPUs, memory and time limit are not negative")
	}
	if r.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(int(math.Ceil(r.CPUs))))
	}
	if r.MemoryBytes > 0 {
		args = append(args, "--mem="+strconv.FormatInt((r.MemoryBytes+(1<<20)-1)>>20, 10)+"M")
	}
	if r.TimeLimit > 0 {
		mins := int64(math.Ceil(r.TimeLimit.Minutes()))
		args = append(args, "--time="+strconv.FormatInt(mins, 10))
	}
	return args, nil
}

// gpuArgs asks for GPUs as GRES: --gres is per node, on every version.
func gpuArgs(r jobs.Resources) ([]string, error) {
	if r.GPUs < 0 || r.GPUsPerNode < 0 || r.Nodes < 0 {
		return nil, errors.New("slurm: GPU and node counts are not negative")
	}
	if r.Nodes <= 1 {
		if r.GPUsPerNode > 0 && r.GPUs == 0 {
			r.GPUs = r.GPUsPerNode
		}
		args := []string{"--nodes=1"}
		if r.GPUs > 0 {
			args = append(args, "--gres=gpu:"+strconv.Itoa(r.GPUs))
		}
		return args, nil
	}
	if r.GPUs > 0 && r.GPUsPerNode == 0 {
		return nil, fmt.Errorf("slurm: a job on %d nodes asks GPUs per node (GPUsPerNode), not %d in all", r.Nodes, r.GPUs)
	}
	args := []string{"--nodes=" + strconv.Itoa(r.Nodes), "--ntasks-per-node=1"}
	if r.GPUsPerNode > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(r.GPUsPerNode))
	}
	return args, nil
}

// jobName is the task's name for Slurm: printable, at most 64 bytes.
func jobName(t jobs.Task) string {
	name := t.Name
	if name == "" {
		name = "labpool-" + t.ID
	}
	var b strings.Builder
	for _, c := range name {
		if c < 0x20 || c == 0x7f || b.Len() >= 64 {
			if b.Len() >= 64 {
				break
			}
			c = '_'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// reservedEnv are variables a task may not set: Slurm's own, the GPUs
// Slurm grants, and the input variables of sbatch, salloc and srun (the
// job's values are in sbatch's environment: SBATCH_GRES would ask GPUs
// past the policy).
func reservedEnv(k string) bool {
	return strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "SLURMD_") ||
		strings.HasPrefix(k, "SBATCH_") || strings.HasPrefix(k, "SALLOC_") || strings.HasPrefix(k, "SRUN_") ||
		strings.HasPrefix(k, "LABPOOL_") || k == "CUDA_VISIBLE_DEVICES" ||
		k == "GPU_DEVICE_ORDINAL" || k == "ROCR_VISIBLE_DEVICES"
}

// validEnvName says whether k is a shell variable name.
func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// taskEnv is the environment the script exports: labpool's own, the
// folders of a command job, then the task's.
func taskEnv(t jobs.Task, runtime string) ([]string, error) {
	env := []string{"LABPOOL_JOB=" + t.ID, "LABPOOL_OWNER=" + t.Owner}
	if runtime == "" {
		folders, err := folderEnv(t.Mounts)
		if err != nil {
			return nil, err
		}
		env = append(env, folders...)
	}
	for _, kv := range t.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(k) {
			return nil, fmt.Errorf("slurm: env %q: an entry is NAME=VALUE with NAME of [A-Za-z0-9_]", kv)
		}
		if reservedEnv(k) {
			return nil, fmt.Errorf("slurm: env %s: SLURM_*, SBATCH_*, SALLOC_*, SRUN_*, LABPOOL_* and the GPU variables are set by Slurm and labpool, not by a job", k)
		}
		env = append(env, kv)
	}
	return env, nil
}

// folderEnv gives a command job its folders: a command job runs on the
// host with its account's file access, so there is nothing to mount;
// it reads LABPOOL_FOLDER_<NAME>=<host path>, NAME from the target's last
// element.
func folderEnv(mounts []jobs.TaskMount) ([]string, error) {
	var env []string
	seen := map[string]bool{}
	for _, m := range mounts {
		var b strings.Builder
		for _, c := range strings.ToUpper(filepath.Base(m.Target)) {
			if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
				b.WriteRune(c)
			} else {
				b.WriteByte('_')
			}
		}
		name := "LABPOOL_FOLDER_" + b.String()
		if seen[name] {
			return nil, fmt.Errorf("slurm: folders %q: two folders of a command job end in the same name (%s)", m.Target, name)
		}
		seen[name] = true
		env = append(env, name+"="+m.HostPath)
	}
	return env, nil
}

// runLine is the script's last line: the command, through srun on every
// node of a multi-node job, in the image's runtime for an image job.
func runLine(t jobs.Task, runtime string, p batchPlan) (string, error) {
	if len(t.Cmd) == 0 && t.Image == "" {
		return "", errors.New("slurm: a command job names its command")
	}
	multi := t.Resources.Nodes > 1
	var words []string
	switch runtime {
	case Pyxis:
		words = []string{"srun", "--ntasks-per-node=1", "--container-image=" + shellQuote(t.Image)}
		if m, err := bindList(t.Mounts); err != nil {
			return "", err
		} else if m != "" {
			words = append(words, "--container-mounts="+shellQuote(m))
		}
	case Apptainer:
		if multi {
			words = []string{"srun", "--ntasks-per-node=1"}
		}
		words = append(words, shellQuote(p.Apptainer), "exec", "--nv")
		if m, err := bindList(t.Mounts); err != nil {
			return "", err
		} else if m != "" {
			words = append(words, "--bind", shellQuote(m))
		}
		words = append(words, shellQuote(apptainerImage(t.Image)))
	default:
		if multi {
			words = []string{"srun", "--ntasks-per-node=1"}
		}
	}
	for _, c := range t.Cmd {
		words = append(words, shellQuote(c))
	}
	return "exec " + strings.Join(words, " "), nil
}

// bindList is the mounts as pyxis and Apptainer read them:
// "SRC:DST[:ro],...". A path with ',' or ':' would read two ways.
func bindList(mounts []jobs.TaskMount) (string, error) {
	var parts []string
	for _, m := range mounts {
		for _, p := range []string{m.HostPath, m.Target} {
			if strings.ContainsAny(p, ",:\n") || !filepath.IsAbs(p) {
				return "", fmt.Errorf("slurm: folder path %q: a container mount path is absolute, without ',' or ':'", p)
			}
		}
		s := m.HostPath + ":" + m.Target
		if m.ReadOnly {
			s += ":ro"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ","), nil
}

// apptainerImage names a registry image as Apptainer wants it.
func apptainerImage(image string) string {
	if strings.Contains(image, "://") || strings.HasPrefix(image, "/") {
		return image
	}
	return "docker://" + image
}

// shellQuote quotes s for sh: single quotes, with ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
