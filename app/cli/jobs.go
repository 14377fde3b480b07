package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/internal/openstat"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/jobs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func jobCmds(g *globals) []*cobra.Command {
	return []*cobra.Command{runCmd(g), psCmd(g), logsCmd(g), stopCmd(g), rmCmd(g), statsCmd(g), openCmd(g), imagesCmd(g), imageCmd(g)}
}

type runFlags struct {
	node, minGPUMem, memory, shm, name, restart string
	gpuMem, mig                                 string
	gpus                                        int
	gpuIDs                                      []string
	cpus, gpuShare                              float64
	mounts, env                                 []string
	ports                                       []int
	queue, dryRun                               bool
	cluster                                     clusterFlags
}

func runCmd(g *globals) *cobra.Command {
	var f runFlags
	var asJSON *bool
	c := &cobra.Command{
		Use:   "run [flags] IMAGE [CMD...] | run --node CLUSTER [flags] -- CMD...",
		Short: "Launch a container on free GPUs of the pool, or a job on a Slurm cluster; prints the job ID last",
		Long: `Launch a container on free GPUs of the pool, or a job on a Slurm cluster;
prints the job ID last. --dry-run prints the plan instead: where it would run
and why (on a cluster, what sbatch will be asked and whether it starts now);
with --node, of that machine alone. A dry-run whose job does not fit prints
its plan and exits 1, as a launch refused does.

On a Slurm cluster (a machine whose agent runs with --slurm, see labpool
nodes): --partition, --gpus N on one node or --nodes N --gpus-per-node G,
--cpus and --memory (per node) and --time (2h, 90m, or Slurm's 1-12:00:00,
30:00) go to sbatch. "-- CMD..." without an image runs a command job; an image
runs through the cluster's pyxis or Apptainer. The job runs as the Unix account
the cluster's owner maps you to (policy --slurm-user), or else as the cluster's
job account, never as its agent's own user; your signed launch records you as
its owner.

Isolation, on the machine that runs the job:
  Where its Docker does not remap users (userns-remap), a job runs as an
  unprivileged host user: uid 65534 (nobody), or the owner of its read-write
  shared folder when that owner is not root. It runs as root only if that
  machine's policy allows it (labpool policy --allow-root). Where Docker remaps
  users, root in the job is an unprivileged user on the host.
  A job keeps no Linux capability, gains no privilege (no-new-privileges), and
  cannot set a setuid or setgid bit on any file (seccomp: Docker's default
  profile, plus chmod, open, mkdir and mknod refused with such a mode), so
  nothing it writes into a shared folder is root's or runs as anyone else.
  Memory is limited to the machine's default (8 GiB or half its RAM, whichever
  is less) unless --memory asks more, up to the machine's maximum; logs are
  capped at 64 MiB.
  Only the job's owner (and the pool's admins and owners) stop it, remove it,
  read its logs, stats and command line or open its ports; everyone sees that
  it exists. Environment values (-e) never leave that machine except to the
  job's owner.

What a job reaches:
  Its own network: no other job (yours or anyone's) and none of the machine's
  labpool ports. --port publishes nothing on the machine: "labpool open JOB
  PORT" reaches the port through that machine's agent. Beyond that, the
  machine's policy decides (labpool policy --job-network): "outside" (the
  default) reaches the LAN and the internet but not the machine itself;
  "isolated" reaches nothing; "host" also reaches the machine's other services.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(args, cmd.ArgsLenAtDash())
			if err != nil {
				return usageError{err}
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			req := app.LaunchRequest{Node: f.node, Spec: spec}
			if f.dryRun {
				p, err := c.Plan(cmd.Context(), req)
				if err != nil {
					return err
				}
				if f.node != "" {
					p.Nodes = onlyNode(p.Nodes, p.Node) // the machine named, not every other one refused
				}
				if err := emit(cmd.OutOrStdout(), *asJSON, p, func(out io.Writer) { writePlan(out, p) }); err != nil || p.Fits {
					return err
				}
				return errors.New(noFitHint(cmd.Context(), c, req, "it does not fit now (the plan above says why)", true))
			}
			j, err := c.Launch(cmd.Context(), req)
			var refused *app.APIError
			if errors.As(err, &refused) && refused.Code == "no_fit" {
				return errors.New(noFitHint(cmd.Context(), c, req, refused.Message, false))
			}
			if err != nil {
				return err
			}
			if !*asJSON {
				writeRWNote(cmd.ErrOrStderr(), spec.Mounts, j.NodeName)
				writeLoaderNote(cmd.ErrOrStderr(), j)
			}
			return emit(cmd.OutOrStdout(), *asJSON, j, func(out io.Writer) { writeLaunched(out, j) })
		},
	}
	asJSON = jsonFlag(c)
	c.Flags().SetInterspersed(false) // flags after IMAGE belong to CMD
	f.add(c.Flags())
	return c
}

// writeLaunched writes what run launched: where and how it stands, why
// it waits where it is queued (once: not its placement too), where it was
// placed where it was, and its ID last.
func writeLaunched(out io.Writer, j app.Job) {
	st := jobState(j.Job)
	fmt.Fprintf(out, "%s on %s: %s", j.Name, j.NodeName, st)
	if len(j.GPUIndexes) > 0 {
		fmt.Fprintf(out, ", GPUs %v", j.GPUIndexes)
	} else if len(j.Spec.MIGIDs) > 0 {
		fmt.Fprintf(out, ", MIG %s", strings.Join(j.Spec.MIGIDs, ","))
	}
	why := waitReason(j.Job)
	if j.Error != "" && j.State != jobs.Queued && !strings.Contains(st, j.Error) {
		fmt.Fprintf(out, " (%s)", j.Error)
	}
	fmt.Fprintln(out)
	switch {
	case why != "":
		fmt.Fprintln(out, "  ↳ "+field(why)) // one line whatever it holds
	case j.Placement != "" && j.State != jobs.Queued:
		fmt.Fprintln(out, "placed: "+j.Placement)
	}
	if n := j.ShareNote(); n != "" {
		fmt.Fprintln(out, "share: "+n)
	}
	fmt.Fprintln(out, j.ID)
}

// add gives fl run's flags.
func (f *runFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.node, "node", "", "machine (name or ID); default: labpool picks")
	fl.IntVar(&f.gpus, "gpus", 0, "number of GPUs")
	fl.StringSliceVar(&f.gpuIDs, "gpu-ids", nil, "these GPU indexes, e.g. 0,3, or MIG instances by UUID (MIG-..., see labpool gpus)")
	fl.StringVar(&f.minGPUMem, "min-gpu-mem", "", "each GPU with at least this much memory, e.g. 20GiB")
	fl.Float64Var(&f.gpuShare, "gpu-share", 0, "a fraction of one GPU, e.g. 0.25 (MPS where the machine runs it; time-sliced and uncapped otherwise)")
	fl.StringVar(&f.gpuMem, "gpu-mem", "", "with --gpu-share: cap the share's GPU memory, e.g. 20GiB")
	fl.StringVar(&f.mig, "mig", "", "MIG instances of this profile, e.g. 3g.40gb (--gpus says how many; by UUID: --gpu-ids MIG-...)")
	fl.Float64Var(&f.cpus, "cpus", 0, "CPU limit (cores)")
	fl.StringVar(&f.memory, "memory", "", "memory limit, e.g. 32g")
	fl.StringVar(&f.shm, "shm", "", "size of /dev/shm, e.g. 8g")
	fl.StringArrayVar(&f.mounts, "mount", nil, "shared folder FOLDER:/path[:rw] (repeatable)")
	fl.IntSliceVar(&f.ports, "port", nil, "container port that `labpool open` may reach (repeatable); it is published nowhere: the job's network alone reaches it")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "environment K=V (repeatable)")
	fl.StringVar(&f.name, "name", "", "job name")
	fl.StringVar(&f.restart, "restart", "", "restart policy: no or on-failure")
	fl.BoolVar(&f.queue, "queue", false, "wait for busy GPUs instead of failing")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (where it would run, and why) and launch nothing")
	f.cluster.add(fl)
}

// spec reads the flags and args: IMAGE [CMD...], or CMD... after "--"
// (dash: where "--" was, -1 without one) for a command job.
func (f *runFlags) spec(args []string, dash int) (jobs.Spec, error) {
	s := jobs.Spec{Image: args[0], Cmd: args[1:], Name: f.name, GPUs: f.gpus,
		CPUs: f.cpus, Env: f.env, Ports: f.ports, Queue: f.queue, GPUShare: f.gpuShare, MIGProfile: f.mig}
	s.Restart = f.restart
	if f.gpus > 0 && len(f.gpuIDs) > 0 {
		return s, errors.New("give --gpus or --gpu-ids, not both")
	}
	if dash == 0 {
		s.Image, s.Cmd = "", args // -- CMD...: a command job, no image
	}
	if err := f.cluster.fill(&s); err != nil {
		return s, err
	}
	var err error
	if s.GPUIDs, s.MIGIDs, err = parseGPUIDs(f.gpuIDs); err != nil {
		return s, err
	}
	for _, sz := range []struct {
		flag, in string
		out      func(int64)
	}{
		{"--min-gpu-mem", f.minGPUMem, func(n int64) { s.MinGPUMemBytes = uint64(n) }},
		{"--gpu-mem", f.gpuMem, func(n int64) { s.GPUMemBytes = uint64(n) }},
		{"--memory", f.memory, func(n int64) { s.MemoryBytes = n }},
		{"--shm", f.shm, func(n int64) { s.ShmBytes = n }},
	} {
		if sz.in == "" {
			continue
		}
		n, err := jobs.ParseSize(sz.in)
		if err != nil {
			return s, fmt.Errorf("%s: %w", sz.flag, err)
		}
		sz.out(n)
	}
	for _, m := range f.mounts {
		mt, err := parseMount(m)
		if err != nil {
			return s, err
		}
		s.Mounts = append(s.Mounts, mt)
	}
	return s, nil
}

// parseMount reads FOLDER:/path[:rw|:ro].
func parseMount(s string) (jobs.Mount, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return jobs.Mount{}, fmt.Errorf("--mount %q: want FOLDER:/path[:rw]", s)
	}
	m := jobs.Mount{Folder: parts[0], Target: parts[1]}
	if len(parts) == 3 {
		switch parts[2] {
		case "rw":
			m.ReadWrite = true
		case "ro":
		default:
			return m, fmt.Errorf("--mount %q: the mode is rw or ro", s)
		}
	}
	return m, nil
}

func psCmd(g *globals) *cobra.Command {
	var all, asJSON, wide bool
	c := &cobra.Command{
		Use:   "ps",
		Short: "List the pool's jobs (running and queued; --all for ended ones too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			list, err := r.Jobs(cmd.Context(), all)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), list)
			}
			return writeJobs(cmd.OutOrStdout(), list, time.Now(), wide)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "include ended jobs")
	c.Flags().BoolVar(&wide, "wide", false, "say why a queued job waits in full, not cut at "+strconv.Itoa(waitLineMax)+" characters")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// waitLineMax is how much of why a queued job waits ps says, on the line
// under it, without --wide.
const waitLineMax = 120

// writeJobs writes the jobs' table: a row per job, STATE short, and why a
// queued job waits on a line of its own under it (cut at waitLineMax
// characters unless wide).
func writeJobs(w io.Writer, list []app.Job, now time.Time, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tMACHINE\tSTATE\tGPUS\tHOSTS\tIMAGE\tOWNER\tRUNTIME")
	for _, j := range list {
		st := jobState(j.Job)
		if j.Stale {
			st += " (last known)"
		}
		st += reclaimNote(j.Job, now) + stopNote(j.Job, now) + jobLendNote(j.Job)
		image, hosts := j.Image, "-"
		if image == "" {
			image = "(command)"
		}
		if len(j.Hosts) > 0 {
			hosts = strings.Join(j.Hosts, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shortJob(j.ID), j.Name, executorName(j), st,
			jobGPUs(j.Job), hosts, image, j.OwnerName, runtime(j.Job, now))
		if why := waitReason(j.Job); why != "" {
			if !wide {
				why = cutText(why, waitLineMax)
			}
			fmt.Fprintf(tw, "  ↳ %s\n", field(why)) // no tab: the columns keep their widths
		}
	}
	return tw.Flush()
}

// executorName is the machine a job runs on, and "(slurm)" where that
// machine's Slurm runs it.
func executorName(j app.Job) string {
	if j.Executor == "" || j.Executor == "docker" {
		return j.NodeName
	}
	return j.NodeName + " (" + j.Executor + ")"
}

// jobGPUs is a job's GPUs: the indexes granted on a machine, or what a
// cluster job asked of Slurm ("2", "2x4" on several nodes).
func jobGPUs(j jobs.Job) string {
	switch {
	case len(j.GPUIndexes) > 0 && j.Spec.GPUShare > 0:
		return fmt.Sprintf("%v %s", j.GPUIndexes, shareShort(j))
	case len(j.GPUIndexes) > 0:
		return fmt.Sprint(j.GPUIndexes)
	case j.Spec.Nodes > 1 && j.Spec.GPUsPerNode > 0:
		return fmt.Sprintf("%dx%d", j.Spec.Nodes, j.Spec.GPUsPerNode)
	case j.Executor != "" && j.Executor != "docker" && j.Spec.GPUs > 0:
		return strconv.Itoa(j.Spec.GPUs)
	}
	return "[]"
}

// shareShort is a share in a table: "25% mps" or "25% uncapped".
func shareShort(j jobs.Job) string {
	mode := "uncapped"
	if j.ShareMode == jobs.ShareMPS {
		mode = "mps"
	}
	return fmt.Sprintf("%.0f%% %s", j.Spec.GPUShare*100, mode)
}

func shortJob(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// runtime is how long a job has run (so far).
func runtime(j jobs.Job, now time.Time) string {
	if j.Started == nil {
		return "-"
	}
	end := now
	if j.Finished != nil {
		end = *j.Finished
	}
	return end.Sub(*j.Started).Round(time.Second).String()
}

func logsCmd(g *globals) *cobra.Command {
	var follow, raw bool
	var tail int
	c := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print a job's output (-f to follow)",
		Long: `Print a job's output (-f to follow).

The output is the job's own bytes. On a terminal, the characters a terminal
acts on (escape sequences, carriage returns, bidi overrides) are shown as
visible escapes such as \x1b, since the job may run another member's code;
--raw passes them through (a progress bar redrawn in place). Into a pipe or
a file the bytes go as the job wrote them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			rc, err := c.Logs(cmd.Context(), args[0], follow, tail)
			if err != nil {
				return err
			}
			defer rc.Close()
			w := logWriter(rawOut(cmd), isTerminal(rawOut(cmd)), raw)
			_, err = io.Copy(w, rc)
			if e, ok := w.(*escWriter); ok {
				e.Flush()
			}
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output")
	c.Flags().IntVar(&tail, "tail", -1, "only the last N lines (-1: all)")
	c.Flags().BoolVar(&raw, "raw", false, "on a terminal too, print the job's output as it is, escape sequences included")
	return c
}

func stopCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "stop JOB",
		Short: "Stop a job (a queued one leaves the queue)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			j, err := c.StopJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, j, func(w io.Writer) { fmt.Fprintln(w, stoppedLine(j)) })
		},
	}
	asJSON = jsonFlag(c)
	return c
}

// stoppedLine says how a stopped job stands, as ps does: a queued Slurm
// job cancelled in the cluster's queue is "cancelled", not "exited".
func stoppedLine(j app.Job) string {
	return fmt.Sprintf("%s on %s: %s", j.Name, j.NodeName, jobState(j.Job))
}

// removed is what rm --json prints.
type removed struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Node   string `json:"node"`
	Forced bool   `json:"forced"`
}

func rmCmd(g *globals) *cobra.Command {
	var force bool
	var asJSON *bool
	c := &cobra.Command{
		Use:   "rm JOB",
		Short: "Remove an ended job's container (a running one only with --force, which stops it and loses its work)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			j, err := c.Job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := c.RemoveJob(cmd.Context(), app.RemoveRequest{Ref: app.JobRef(j.Job), Force: force}); err != nil {
				return err
			}
			out := removed{ID: j.ID, Name: j.Name, Node: j.Node, Forced: force}
			return emit(cmd.OutOrStdout(), *asJSON, out, func(w io.Writer) { fmt.Fprintf(w, "Removed %s on %s.\n", j.Name, j.NodeName) })
		},
	}
	c.Flags().BoolVarP(&force, "force", "f", false, "remove a running job too: it is stopped and its work lost")
	asJSON = jsonFlag(c)
	return c
}

func statsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats JOB",
		Short: "CPU, memory and GPU use of a job's own processes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			st, err := c.JobStats(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "CPU %.1f%%   memory %s / %s\n", st.CPUPercent, Bytes(st.MemUsedBytes), Bytes(st.MemLimitBytes))
			for _, g := range st.GPUs {
				on := ""
				if g.Host != "" {
					on = " on " + g.Host // a cluster job's compute node
				}
				fmt.Fprintf(out, "GPU %d%s  %.0f%%  %s used by this job  %s\n", g.Index, on, g.UtilPercent, Bytes(g.MemUsedBytes), g.UUID)
				writeJobProcesses(out, g.Processes)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func openCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "open JOB PORT",
		Short: "Forward a job's container port to a loopback address here (127.0.0.2, or ::1 on macOS; never 127.0.0.1, the web UI's) and print the URL",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			port, err := strconv.Atoi(args[1])
			if err != nil {
				return usageError{fmt.Errorf("PORT %q is not a number", args[1])}
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			t, err := c.Open(cmd.Context(), args[0], port)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, t, func(w io.Writer) { fmt.Fprintln(w, t.URL) })
		},
	}
	asJSON = jsonFlag(c)
	return c
}

func imagesCmd(g *globals) *cobra.Command {
	var node string
	var asJSON bool
	c := &cobra.Command{
		Use:   "images",
		Short: "List a machine's container images",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			if node == "" {
				// A laptop runs no containers: list the images of the
				// machines that do, as the Launch dialog does.
				pool, ok, err := poolImages(cmd.Context(), c, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if ok && asJSON {
					return printJSON(cmd.OutOrStdout(), pool)
				}
				if ok {
					return writePoolImages(cmd.OutOrStdout(), pool)
				}
			}
			imgs, err := c.Images(cmd.Context(), node)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), imgs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tID\tSIZE\tCREATED\tLOADED BY")
			for _, im := range imgs {
				tags := strings.Join(im.Tags, ",")
				if tags == "" {
					tags = "<none>"
				}
				by := im.LoadedByName
				if by == "" {
					by = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", tags, shortJob(strings.TrimPrefix(im.ID, "sha256:")), Bytes(uint64(im.Size)), Ago(im.Created, time.Now()), by)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&node, "node", "", "machine (default: this one, or, where it runs no containers, every machine that does)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// machineImages are the images of one machine of the pool.
type machineImages struct {
	Node     string             `json:"node"`
	NodeName string             `json:"node_name"`
	Images   []containers.Image `json:"images"`
	Error    string             `json:"error,omitempty"` // why they could not be listed
}

// poolImages lists, when this machine runs no containers, the images of
// each online machine that does (ok). It says so on stderr first.
func poolImages(ctx context.Context, c *web.Client, stderr io.Writer) ([]machineImages, bool, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, false, err
	}
	var self *app.Node
	for i := range nodes {
		if nodes[i].Self {
			self = &nodes[i]
		}
	}
	if self == nil || self.Containers {
		return nil, false, nil
	}
	var out []machineImages
	for _, n := range nodes {
		if n.Self || !n.Online || !n.Containers || n.Cluster != nil {
			continue
		}
		m := machineImages{Node: n.ID, NodeName: n.Name}
		imgs, err := c.Images(ctx, n.ID)
		if err != nil {
			m.Error = err.Error()
		}
		m.Images = imgs
		out = append(out, m)
	}
	why := "this machine runs no containers"
	if self.ContainersError != "" {
		why += " (" + self.ContainersError + ")"
	}
	if len(out) == 0 {
		return nil, false, fmt.Errorf("%s, and no online machine of the pool does", why)
	}
	fmt.Fprintf(stderr, "labpool: %s: listing the images of the machines that run them (--node picks one)\n", why)
	return out, true, nil
}

func writePoolImages(w io.Writer, pool []machineImages) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tIMAGE\tID\tSIZE\tCREATED\tLOADED BY")
	for _, m := range pool {
		if m.Error != "" {
			fmt.Fprintf(tw, "%s\t(%s)\t\t\t\t\n", m.NodeName, m.Error)
			continue
		}
		for _, im := range m.Images {
			tags := strings.Join(im.Tags, ",")
			if tags == "" {
				tags = "<none>"
			}
			by := im.LoadedByName
			if by == "" {
				by = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.NodeName, tags, shortJob(strings.TrimPrefix(im.ID, "sha256:")), Bytes(uint64(im.Size)), Ago(im.Created, time.Now()), by)
		}
	}
	return tw.Flush()
}

func imageCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "image", Short: "Copy or pull container images to a machine"}
	var loadForce, pullForce bool
	var loadJSON, pullJSON *bool
	load := &cobra.Command{
		Use:   "load NODE FILE.tar",
		Short: "Copy an image archive (docker save) to a machine, with progress; an existing tag of another image is never replaced but with --force (the machine's owner)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, fi, err := openstat.Open(os.Open, args[1])
			if err != nil {
				return err
			}
			defer f.Close()
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			rc, err := c.LoadImage(cmd.Context(), args[0], f, loadForce)
			if err != nil {
				return err
			}
			defer rc.Close()
			return showProgress(cmd, *loadJSON, rc, newLoadBars(cmd.ErrOrStderr(), fi.Name(), fi.Size()))
		},
	}
	pull := &cobra.Command{
		Use:   "pull NODE REF",
		Short: "Make a machine pull an image from a registry it can reach",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			rc, err := c.PullImage(cmd.Context(), app.PullRequest{Node: args[0], Ref: args[1], Force: pullForce})
			if err != nil {
				return err
			}
			defer rc.Close()
			return showProgress(cmd, *pullJSON, rc, newLoadBars(cmd.ErrOrStderr(), "", 0))
		},
	}
	load.Flags().BoolVar(&loadForce, "force", false, "replace a tag that names another image (the machine's own user or a pool owner only)")
	pull.Flags().BoolVar(&pullForce, "force", false, "replace an image of that tag loaded on the machine (the machine's own user or a pool owner only)")
	loadJSON, pullJSON = jsonFlag(load), jsonFlag(pull)
	c.AddCommand(load, pull)
	return c
}

// writeLoaderNote warns that a job runs an image a member loaded onto its
// machine: the name it was given did not resolve to a registry's image.
func writeLoaderNote(w io.Writer, j app.Job) {
	if j.ImageLoadedByName == "" {
		return
	}
	fmt.Fprintf(w, "warning: %s on %s is an image that %s loaded onto that machine, not one a registry serves under that name\n",
		j.Image, j.NodeName, j.ImageLoadedByName)
}
