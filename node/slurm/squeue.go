package slurm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Job is one job as squeue (or scontrol) shows it, in the same shape for
// every Slurm version.
type Job struct {
	ID        string
	Name      string
	User      string
	Partition string
	State     string   // the base state: PENDING, RUNNING, COMPLETED...
	Flags     []string // the state's further flags (v0.0.40+: COMPLETING...)
	Reason    string   // state_reason: why it is pending, or how it ended
	NodeList  string   // compressed ("node[1-2]")
	Nodes     []string // expanded
	NodeCount int
	GPUs      int // in all, over every node
	CPUs      int
	Submitted time.Time
	Started   time.Time
	Ended     time.Time
	TimeLimit time.Duration // 0: none
	ExitCode  int
	Signal    int
	Comment   string
	Output    string // standard_output as Slurm prints it (may hold %j)
	// LabpoolJob and Owner come from the comment's labpool marker.
	LabpoolJob string
	Owner      string
}

// Meta is what a --json output says of itself.
type Meta struct {
	Release    string // Slurm's version ("22.05.8")
	DataParser string // "v0.0.38", "v0.0.41"
	Cluster    string
}

type metaJSON struct {
	Plugin struct {
		Type       text `json:"type"`
		DataParser text `json:"data_parser"`
	} `json:"plugin"`
	Slurm struct { // "Slurm" in v0.0.38, "slurm" later: json matches both
		Release text `json:"release"`
		Cluster text `json:"cluster"`
	} `json:"slurm"`
}

func (m metaJSON) meta() Meta {
	dp := string(m.Plugin.DataParser)
	if dp == "" {
		dp = string(m.Plugin.Type)
	}
	if i := strings.LastIndexByte(dp, '/'); i >= 0 {
		dp = dp[i+1:] // "openapi/v0.0.38", "data_parser/v0.0.40"
	}
	return Meta{Release: string(m.Slurm.Release), DataParser: dp, Cluster: string(m.Slurm.Cluster)}
}

type squeueJSON struct {
	Meta   metaJSON        `json:"meta"`
	Errors json.RawMessage `json:"errors"`
	Jobs   []jobJSON       `json:"jobs"`
}

type jobJSON struct {
	JobID          number   `json:"job_id"`
	ArrayJobID     number   `json:"array_job_id"`
	ArrayTaskID    number   `json:"array_task_id"`
	Name           text     `json:"name"`
	UserName       text     `json:"user_name"`
	Partition      text     `json:"partition"`
	Cluster        text     `json:"cluster"`
	JobState       flags    `json:"job_state"`
	StateReason    text     `json:"state_reason"`
	Nodes          text     `json:"nodes"`
	NodeCount      number   `json:"node_count"`
	CPUs           number   `json:"cpus"`
	Comment        text     `json:"comment"`
	SubmitTime     number   `json:"submit_time"`
	StartTime      number   `json:"start_time"`
	EndTime        number   `json:"end_time"`
	TimeLimit      number   `json:"time_limit"` // minutes
	ExitCode       exitCode `json:"exit_code"`
	TresPerNode    text     `json:"tres_per_node"`
	TresPerJob     text     `json:"tres_per_job"`
	TresAllocStr   text     `json:"tres_alloc_str"`
	GresDetail     []string `json:"gres_detail"`
	StandardOutput text     `json:"standard_output"`
}

// ParseSqueue reads `squeue --json` of any supported Slurm version.
func ParseSqueue(data []byte) (Meta, []Job, error) {
	var out squeueJSON
	if err := json.Unmarshal(data, &out); err != nil {
		return Meta{}, nil, fmt.Errorf("read squeue json: %w", err)
	}
	meta := out.Meta.meta()
	jobs := make([]Job, 0, len(out.Jobs))
	for _, j := range out.Jobs {
		if meta.Cluster == "" {
			meta.Cluster = string(j.Cluster)
		}
		jobs = append(jobs, j.job())
	}
	return meta, jobs, nil
}

func (j jobJSON) job() Job {
	out := Job{
		ID:        strconv.FormatInt(j.JobID.value(0), 10),
		Name:      string(j.Name),
		User:      string(j.UserName),
		Partition: string(j.Partition),
		Reason:    string(j.StateReason),
		NodeList:  string(j.Nodes),
		NodeCount: int(j.NodeCount.value(0)),
		CPUs:      int(j.CPUs.value(0)),
		Comment:   string(j.Comment),
		Submitted: unixTime(j.SubmitTime),
		TimeLimit: time.Duration(j.TimeLimit.value(0)) * time.Minute,
		ExitCode:  j.ExitCode.Code,
		Signal:    j.ExitCode.Signal,
		Output:    string(j.StandardOutput),
	}
	if len(j.JobState) > 0 {
		out.State = j.JobState[0]
	}
	if len(j.JobState) > 1 {
		out.Flags = j.JobState[1:]
	}
	if flags(out.Flags).has("COMPLETING") {
		out.State = "COMPLETING" // as 22.05 prints it: the job still holds its nodes
	}
	if out.Reason == "None" {
		out.Reason = ""
	}
	if out.State != "PENDING" {
		out.Started = unixTime(j.StartTime)
	}
	if Ended(out.State) {
		out.Ended = unixTime(j.EndTime)
	}
	out.Nodes, _ = ExpandHostlist(out.NodeList) // a broken list leaves Nodes empty
	out.GPUs = j.gpus(out.NodeCount)
	out.LabpoolJob, out.Owner = ParseComment(out.Comment)
	return out
}

// gpus is the job's GPUs in all: what it holds when Slurm says, else
// what it asked.
func (j jobJSON) gpus(nodes int) int {
	if n := gpuTotal(string(j.TresAllocStr)); n > 0 {
		return n
	}
	n := 0
	for _, d := range j.GresDetail {
		n += gpuTotal(d)
	}
	if n > 0 {
		return n
	}
	if n := gpuTotal(string(j.TresPerJob)); n > 0 {
		return n
	}
	return gpuTotal(string(j.TresPerNode)) * max(1, nodes)
}

// unixTime reads a Slurm time: 0, unset and infinite are the zero time.
func unixTime(n number) time.Time {
	v := n.value(0)
	if v <= 0 || v > 1<<40 {
		return time.Time{}
	}
	return time.Unix(v, 0).UTC()
}

// Ended says whether a Slurm job state is final.
func Ended(state string) bool {
	switch state {
	case "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING",
		"RESIZING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING",
		"STAGE_OUT", "STOPPED", "POWER_UP_NODE", "RESV_DEL_HOLD", "":
		return false
	}
	return true
}
