package jobs

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/labpool/labpool/node/mps"
)

// RefusedError is a request refused by a safety or sanity rule, or (when
// Forbidden) by who asks or the machine's policy; the message names the
// rule.
type RefusedError struct {
	Rule      string
	Detail    string
	Forbidden bool // an authorization or policy rule: HTTP 403 "forbidden"
}

func (e *RefusedError) Error() string {
	if e.Forbidden {
		return e.Rule + ": " + e.Detail
	}
	return fmt.Sprintf("refused by rule %q: %s", e.Rule, e.Detail)
}

func refuse(rule, format string, a ...any) error {
	return &RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// imageRef is a loose check of a Docker image reference.
var imageRef = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`)

// privateDigestForm is Spec.PrivateDigest's form (PrivateDigest); its salt
// is at most maxPrivateSalt characters.
var privateDigestForm = regexp.MustCompile(`^[0-9a-f]{64}$`)

const maxPrivateSalt = 64

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Limits on a request's sizes.
const (
	maxCmdArgs = 256
	maxEnv     = 256
	maxMounts  = 32
	maxPorts   = 32
	maxArgLen  = 16 << 10
)

// Validate refuses what an executor with caps cannot run, every option
// that could give a member root on this host, and malformed requests,
// before any backend call: first the container options where the executor
// runs no Docker container, then the executor's own rules (v, nil for
// none), then the portable ones. gpusOnNode is how many GPUs this machine
// has (read only where the executor does not schedule).
func Validate(s Spec, caps Capabilities, v Validator, gpusOnNode int) error {
	if !s.ContainerSpec.IsZero() && !slices.Contains(caps.Images, "docker") {
		return refuse("container-options", "%s runs no Docker container: its jobs take no container options (user, shm, restart, privileged, host namespaces, capabilities, devices, binds, port binds)", executorName(caps))
	}
	if v != nil {
		if err := v.ValidateTask(s); err != nil {
			return err
		}
	}
	if err := validateGPUEnv(s.Env); err != nil {
		return err
	}
	if len(s.PrivateSalt) > maxPrivateSalt || (s.PrivateDigest != "" && !privateDigestForm.MatchString(s.PrivateDigest)) {
		return refuse(RuleHandoverPrivate, "the digest is 64 hex digits, its salt at most %d characters", maxPrivateSalt)
	}
	if err := validateShape(s, caps); err != nil {
		return err
	}
	if err := validateCluster(s, caps); err != nil {
		return err
	}
	return validateResources(s, caps, gpusOnNode)
}

func executorName(caps Capabilities) string {
	if caps.Name == "" {
		return "this machine"
	}
	return "this machine's executor (" + caps.Name + ")"
}

// validateGPUEnv refuses variables that pick GPUs: GPUs are given by the
// GPU ledger, or by the cluster's scheduler; and those of MPS, which the
// agent sets for a GPU share (its daemon, threads, memory cap).
func validateGPUEnv(env []string) error {
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(strings.ToUpper(k), "NVIDIA_") {
			return refuse("no-gpu-env", "%s: the NVIDIA runtime reads it to pick GPUs; GPUs are given by the GPU ledger", k)
		}
		if mps.Reserved(k) {
			return refuse("no-mps-env", "%s: MPS variables are the agent's, set from the job's GPU share (--gpu-share, --gpu-mem)", k)
		}
	}
	return nil
}

// ValidateImage refuses what is not an image reference (name[:tag][@digest]).
func ValidateImage(ref string) error {
	if ref == "" || len(ref) > 255 || !imageRef.MatchString(ref) {
		return refuse("image-ref", "%q is not an image reference", ref)
	}
	return nil
}

// validateImageFor refuses an image where caps runs none, and a command
// job (no image) where caps runs images only.
func validateImageFor(s Spec, caps Capabilities) error {
	switch {
	case s.Image == "" && caps.Commands:
		if len(s.Cmd) == 0 {
			return refuse("cmd", "a job without an image runs a command: give one")
		}
		return nil
	case s.Image != "" && len(caps.Images) == 0 && caps.Commands:
		return refuse("command-jobs-only", "this cluster runs command jobs only: it has neither pyxis nor Apptainer")
	}
	return ValidateImage(s.Image)
}

func validateShape(s Spec, caps Capabilities) error {
	if err := validateImageFor(s, caps); err != nil {
		return err
	}
	if len(s.Name) > 64 || (s.Name != "" && !envKeyOrName(s.Name)) {
		return refuse("name", "%q: a name is up to 64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if len(s.Cmd) > maxCmdArgs || len(s.Env) > maxEnv || len(s.Mounts) > maxMounts || len(s.Ports) > maxPorts {
		return refuse("size", "too many arguments, variables, mounts or ports")
	}
	for _, a := range append(slices.Clone(s.Cmd), s.Env...) {
		if len(a) > maxArgLen || strings.ContainsRune(a, 0) {
			return refuse("size", "an argument is over %d bytes or holds a NUL", maxArgLen)
		}
	}
	for _, e := range s.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || !envKey.MatchString(k) {
			return refuse("env", "%q is not K=V", e)
		}
	}
	if err := validateMounts(s.Mounts); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, p := range s.Ports {
		if p <= 0 || p > 65535 {
			return refuse("port", "port %d is out of range", p)
		}
		if seen[p] {
			return refuse("port", "port %d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func validateMounts(ms []Mount) error {
	targets := map[string]bool{}
	for _, m := range ms {
		t := path.Clean(m.Target)
		if m.Folder == "" || !path.IsAbs(m.Target) || t == "/" || underAny(t, "/proc", "/sys", "/dev", "/etc") {
			return refuse("mount-target", "mount %s:%s: the target must be an absolute path outside /proc, /sys, /dev and /etc", m.Folder, m.Target)
		}
		if targets[t] {
			return refuse("mount-target", "mount %s:%s: two mounts on one path", m.Folder, m.Target)
		}
		targets[t] = true
	}
	return nil
}

func envKeyOrName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func underAny(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// MaxBytes bounds memory, shm and GPU memory sizes (1 PiB): anything above
// is a typo.
const MaxBytes = 1 << 50

const maxBytes = MaxBytes

// partitionName is what a Slurm partition's name may look like.
var partitionName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// maxTimeLimit bounds a job's time limit (a year): anything above
// is a typo.
const maxTimeLimit = 366 * 24 * 3600

// validateCluster refuses the options of a cluster where caps does not
// schedule (partition, time limit) or spans no nodes (nodes, GPUs per
// node), and values that make no sense.
func validateCluster(s Spec, caps Capabilities) error {
	switch {
	case s.Partition != "" && !caps.Schedules:
		return refuse("cluster-options", "a partition is a cluster's option: %s schedules no jobs", executorName(caps))
	case (s.Nodes > 1 || s.GPUsPerNode != 0) && !caps.MultiNode:
		return refuse("multi-node", "nodes and GPUs per node ask for a job across machines: %s runs a job on one machine", executorName(caps))
	case s.Nodes < 0 || s.Nodes > 4096:
		return refuse("nodes", "%d nodes is out of range (1 to 4096)", s.Nodes)
	case s.GPUsPerNode < 0 || s.GPUsPerNode > 64:
		return refuse("gpus", "%d GPUs per node is out of range (0 to 64)", s.GPUsPerNode)
	case s.GPUsPerNode > 0 && s.Nodes <= 1:
		return refuse("gpus", "GPUs per node go with nodes (2 or more): on one node, ask for GPUs")
	case s.Nodes > 1 && s.GPUs > 0:
		return refuse("gpus", "ask for GPUs, or for nodes and GPUs per node, not both")
	case s.TimeLimitSeconds < 0 || s.TimeLimitSeconds > maxTimeLimit:
		return refuse("time-limit", "a time limit of %ds is out of range (up to a year)", s.TimeLimitSeconds)
	case s.Partition != "" && !partitionName.MatchString(s.Partition):
		return refuse("partition", "%q is not a partition name", s.Partition)
	}
	return nil
}

func validateResources(s Spec, caps Capabilities, gpusOnNode int) error {
	if caps.Schedules {
		return validateScheduled(s)
	}
	switch {
	case !(s.CPUs >= 0 && s.CPUs <= 4096): // NaN fails too
		return refuse("cpus", "%v CPUs is out of range (0 to 4096)", s.CPUs)
	case s.MemoryBytes < 0 || (s.MemoryBytes > 0 && s.MemoryBytes < 6<<20) || s.MemoryBytes > maxBytes:
		return refuse("memory", "a memory limit must be between 6 MiB and 1 PiB")
	case s.MinGPUMemBytes > maxBytes:
		return refuse("gpus", "%d bytes of GPU memory is more than any GPU has", s.MinGPUMemBytes)
	case s.GPUs < 0:
		return refuse("gpus", "the GPU count cannot be negative")
	case s.GPUs > 0 && len(s.GPUIDs) > 0:
		return refuse("gpus", "ask for a GPU count or GPU indexes, not both")
	case s.MIGProfile == "" && (s.GPUs > gpusOnNode || len(s.GPUIDs) > gpusOnNode):
		return refuse("gpus", "%s asked: this machine has %s", gpuCount(max(s.GPUs, len(s.GPUIDs))), gpuCount(gpusOnNode))
	}
	if err := validateMIG(s); err != nil {
		return err
	}
	if err := validateShare(s); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, i := range s.GPUIDs {
		if i < 0 || i >= gpusOnNode {
			return refuse("gpus", "GPU %d does not exist: this machine has %s", i, gpuCount(gpusOnNode))
		}
		if seen[i] {
			return refuse("gpus", "GPU %d is listed twice", i)
		}
		seen[i] = true
	}
	return nil
}

// validateScheduled checks the resources asked of a backend that places
// jobs itself: a count of GPUs, never indexes nor MIG instances of this
// machine.
func validateScheduled(s Spec) error {
	switch {
	case !(s.CPUs >= 0 && s.CPUs <= 4096):
		return refuse("cpus", "%v CPUs is out of range (0 to 4096)", s.CPUs)
	case s.MemoryBytes < 0 || (s.MemoryBytes > 0 && s.MemoryBytes < 6<<20) || s.MemoryBytes > maxBytes:
		return refuse("memory", "a memory limit must be between 6 MiB and 1 PiB")
	case s.GPUs < 0 || s.GPUs > 64:
		return refuse("gpus", "%d GPUs is out of range (0 to 64 on one node)", s.GPUs)
	case len(s.GPUIDs) > 0 || len(s.MIGIDs) > 0 || s.MinGPUMemBytes > 0 || s.MIGProfile != "" || s.GPUShare != 0 || s.GPUMemBytes != 0:
		return refuse("gpus", "the cluster's scheduler places GPUs itself: ask for a count (GPU indexes, MIG instances and GPU memory name a machine's own GPUs)")
	case s.GPUShare != 0 || s.GPUMemBytes > 0 || s.MIGProfile != "":
		return refuse("gpu-share", "the cluster's scheduler places GPUs itself: GPU shares, their memory caps and MIG profiles are for a machine's own GPUs (ask for a count)")
	}
	return nil
}
