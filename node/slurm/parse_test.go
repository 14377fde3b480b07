package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func byID(t *testing.T, list []Job) map[string]Job {
	m := map[string]Job{}
	for _, j := range list {
		m[j.ID] = j
	}
	return m
}

func TestParseSqueue2205(t *testing.T) {
	meta, list, err := ParseSqueue(readFixture(t, "squeue-22.05-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Release != "22.05.8" || meta.DataParser != "v0.0.38" || meta.Cluster != "slm" {
		t.Errorf("meta = %+v", meta)
	}
	jobs := byID(t, list)
	tests := []struct {
		id, state, reason string
		gpus              int
		nodes             []string
		labpool, owner    string
	}{
		{"1", "RUNNING", "", 2, []string{"slm-a"}, "j1", "DEV1"},
		{"2", "RUNNING", "", 2, []string{"slm-a", "slm-b"}, "", ""},
		{"3", "PENDING", "Resources", 4, nil, "", ""},
		{"4", "PENDING", "Priority", 0, nil, "", ""},
	}
	for _, tt := range tests {
		j := jobs[tt.id]
		if j.State != tt.state || j.Reason != tt.reason || j.GPUs != tt.gpus || !cmp.Equal(j.Nodes, tt.nodes) ||
			j.LabpoolJob != tt.labpool || j.Owner != tt.owner {
			t.Errorf("job %s = %+v; want %+v", tt.id, j, tt)
		}
	}
	if j := jobs["1"]; j.Started.IsZero() || !j.Ended.IsZero() || j.User != "root" {
		t.Errorf("job 1 times/user = %v %v %q", j.Started, j.Ended, j.User)
	}
	if j := jobs["3"]; !j.Started.IsZero() {
		t.Errorf("pending job started at %v", j.Started)
	}
}

// TestTaskStates maps every state of the fixtures to labpool's, 22.05
// (recorded) and 23.11 (built from the v0.0.40 format).
func TestTaskStates(t *testing.T) {
	type want struct {
		State  jobs.TaskState
		Code   int
		OOM    bool
		Reason string
	}
	tests := []struct {
		fixture string
		want    map[string]want
	}{
		{"squeue-22.05-ended.json", map[string]want{
			"1": {jobs.TaskCancelled, 0, false, ""},
			"2": {jobs.TaskRunning, 0, false, ""},
			"3": {jobs.TaskCancelled, 0, false, ""},
			"4": {jobs.TaskExited, 3, false, ""},
		}},
		{"squeue-23.11-v0.0.40.json", map[string]want{
			"101": {jobs.TaskRunning, 0, false, ""},
			"102": {jobs.TaskPending, 0, false, "Resources"},
			"103": {jobs.TaskExited, 0, false, ""},
			"104": {jobs.TaskExited, 3, false, ""},
			"105": {jobs.TaskCancelled, 0, false, ""},
			"106": {jobs.TaskTimedOut, 0, false, ""},
			"107": {jobs.TaskExited, 137, true, ""},
			"108": {jobs.TaskFailed, 0, false, "NodeDown"},
			"109": {jobs.TaskRunning, 0, false, ""},
			"110": {jobs.TaskRunning, 0, false, ""},
			"111": {jobs.TaskPending, 0, false, "Priority"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			_, list, err := ParseSqueue(readFixture(t, tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]want{}
			for _, j := range list {
				s, code, oom := taskState(j)
				got[j.ID] = want{s, code, oom, reason(j, s)}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("states (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseSqueue2311(t *testing.T) {
	for _, f := range []string{"squeue-23.11-v0.0.40.json", "squeue-24.05-v0.0.41.json"} {
		meta, list, err := ParseSqueue(readFixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		if meta.Cluster != "hpc" || meta.Release == "" || meta.DataParser[:6] != "v0.0.4" {
			t.Errorf("%s: meta = %+v", f, meta)
		}
		j := byID(t, list)["101"]
		want := Job{ID: "101", Name: "train-llm", User: "lab", Partition: "gpu", State: "RUNNING", NodeList: "gpu[01-02]",
			Nodes: []string{"gpu01", "gpu02"}, NodeCount: 2, GPUs: 8, CPUs: 2,
			Submitted: time.Unix(1795600000, 0).UTC(), Started: time.Unix(1795600010, 0).UTC(), TimeLimit: 2 * time.Hour,
			Comment: "labpool:job=j101,owner=DEVAAA", Output: "/home/lab/.labpool/slurm-101.out", LabpoolJob: "j101", Owner: "DEVAAA"}
		if d := cmp.Diff(want, j); d != "" {
			t.Errorf("%s: job 101 (-want +got):\n%s", f, d)
		}
	}
	_, list, _ := ParseSqueue(readFixture(t, "squeue-23.11-v0.0.40.json"))
	jobs := byID(t, list)
	if j := jobs["105"]; j.Signal != 15 {
		t.Errorf("cancelled job's signal = %d, want 15", j.Signal)
	}
	if j := jobs["111"]; j.LabpoolJob != "" || j.Owner != "" {
		t.Errorf("a malformed marker was read: %+v", j)
	}
	if j := jobs["102"]; j.GPUs != 2 {
		t.Errorf("pending job 102 GPUs = %d, want 2 (asked per node)", j.GPUs)
	}
}

func TestParseSinfo(t *testing.T) {
	meta, nodes, err := ParseSinfo(readFixture(t, "sinfo-22.05-busy.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{Name: "slm-a", State: "allocated", Partitions: []string{"gpu"}, Addr: "127.0.0.1", CPUs: 2, CPUsAlloc: 2,
			MemoryMB: 2000, MemAllocMB: 200, GPUs: []GPUCount{{Type: "fake", Total: 4, Alloc: 3}}},
		{Name: "slm-b", State: "mixed", Partitions: []string{"gpu"}, Addr: "127.0.0.1", CPUs: 2, CPUsAlloc: 1,
			MemoryMB: 2000, MemAllocMB: 100, GPUs: []GPUCount{{Type: "fake", Total: 4, Alloc: 1}}},
	}
	if d := cmp.Diff(want, nodes); d != "" || meta.Release != "22.05.8" {
		t.Errorf("22.05 nodes (-want +got):\n%s; meta %+v", d, meta)
	}
	for _, f := range []string{"sinfo-23.11-v0.0.40.json", "sinfo-24.05-v0.0.41.json"} {
		_, nodes, err := ParseSinfo(readFixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		want := []Node{
			{Name: "gpu01", State: "allocated", Partitions: []string{"gpu"}, Addr: "10.1.0.1", CPUs: 64, MemoryMB: 512000,
				GPUs: []GPUCount{{Type: "a100", Total: 4}}},
			{Name: "gpu02", State: "allocated", Partitions: []string{"gpu"}, Addr: "10.1.0.2", CPUs: 64, MemoryMB: 512000,
				GPUs: []GPUCount{{Type: "a100", Total: 4}}},
			{Name: "gpu03", State: "mixed", Partitions: []string{"gpu"}, Addr: "10.1.0.3", CPUs: 64, CPUsAlloc: 2,
				MemoryMB: 512000, MemAllocMB: 4096, GPUs: []GPUCount{{Type: "v100", Total: 4, Alloc: 1}}},
			{Name: "gpu04", State: "idle+drain", Reason: "bad fan", Partitions: []string{"debug", "gpu"}, Addr: "10.1.0.4",
				CPUs: 64, MemoryMB: 512000, GPUs: []GPUCount{{Type: "", Total: 4}}},
		}
		if d := cmp.Diff(want, nodes); d != "" {
			t.Errorf("%s nodes (-want +got):\n%s", f, d)
		}
	}
}

func TestBuildCluster(t *testing.T) {
	meta, nodes, _ := ParseSinfo(readFixture(t, "sinfo-23.11-v0.0.40.json"))
	_, list, _ := ParseSqueue(readFixture(t, "squeue-23.11-v0.0.40.json"))
	parts := []Partition{{Name: "gpu", Default: true, State: "up", Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04"}},
		{Name: "debug", State: "up", Nodes: []string{"gpu04"}}}
	c := BuildCluster(meta, nodes, parts, byID(t, list), func(j Job) bool { return j.User == "lab" && j.LabpoolJob != "" })
	wantGPUs := []GPUCount{{Type: "", Total: 4}, {Type: "a100", Total: 8, Alloc: 8}, {Type: "v100", Total: 4, Alloc: 1}}
	if d := cmp.Diff(wantGPUs, c.GPUs); d != "" {
		t.Errorf("cluster GPUs (-want +got):\n%s", d)
	}
	if c.Running != 3 || c.Pending != 2 || c.Name != "hpc" || c.Version != "23.11.10" {
		t.Errorf("running %d pending %d name %q version %q; want 3, 2, hpc, 23.11.10", c.Running, c.Pending, c.Name, c.Version)
	}
	var order []string
	for _, q := range c.Queue {
		order = append(order, q.ID)
	}
	// labpool's first (running, then pending), then the others.
	if d := cmp.Diff([]string{"101", "109", "102", "110", "111"}, order); d != "" {
		t.Errorf("queue order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]GPUCount{{Type: "", Total: 4}}, c.Partitions[1].GPUs); d != "" {
		t.Errorf("debug partition GPUs (-want +got):\n%s", d)
	}
}

func TestQueueCap(t *testing.T) {
	jobs := map[string]Job{}
	for i := range QueueCap + 50 {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		jobs[id] = Job{ID: id, State: "PENDING", User: "other"}
	}
	jobs["mine"] = Job{ID: "mine", State: "PENDING", LabpoolJob: "j", User: "lab"}
	c := BuildCluster(Meta{}, nil, nil, jobs, func(j Job) bool { return j.LabpoolJob != "" })
	if len(c.Queue) != QueueCap || c.Queue[0].ID != "mine" || c.Pending != QueueCap+51 {
		t.Errorf("queue %d entries, first %q, pending %d", len(c.Queue), c.Queue[0].ID, c.Pending)
	}
}

func TestParsePartitions(t *testing.T) {
	got := ParsePartitions(readFixture(t, "scontrol-partition-22.05.txt"))
	want := []Partition{{Name: "gpu", Default: true, State: "up", Nodes: []string{"slm-a", "slm-b"}, CPUs: 4}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	got = ParsePartitions([]byte("PartitionName=long Default=NO DefaultTime=1:00:00 MaxTime=7-00:00:00 State=DRAIN Nodes=n[1-2] TotalCPUs=8\n"))
	want = []Partition{{Name: "long", State: "drain", Nodes: []string{"n1", "n2"}, MaxTimeS: 7 * 86400, DefaultTimeS: 3600, CPUs: 8}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseScontrolJobs(t *testing.T) {
	tests := []struct {
		fixture, state string
		code, signal   int
		labpool        string
	}{
		{"scontrol-job-22.05-running.txt", "RUNNING", 0, 0, "j1"},
		{"scontrol-job-22.05-cancelled.txt", "CANCELLED", 0, 15, "j1"},
		{"scontrol-job-22.05-failed.txt", "FAILED", 3, 0, ""},
	}
	for _, tt := range tests {
		list := ParseScontrolJobs(readFixture(t, tt.fixture))
		if len(list) != 1 {
			t.Fatalf("%s: %d jobs", tt.fixture, len(list))
		}
		j := list[0]
		if j.State != tt.state || j.ExitCode != tt.code || j.Signal != tt.signal || j.LabpoolJob != tt.labpool || j.User != "root" {
			t.Errorf("%s: %+v", tt.fixture, j)
		}
	}
	// A name that imitates later keys does not change them.
	line := "JobId=7 JobName=x JobState=COMPLETED Comment=labpool:job=evil,owner=evil UserId=lab(1000) JobState=RUNNING Reason=None ExitCode=0:0 NodeList=n1 Comment=labpool:job=j7,owner=DEV\n"
	j := ParseScontrolJobs([]byte(line))[0]
	if j.ID != "7" || j.State != "RUNNING" || j.LabpoolJob != "j7" || j.User != "lab" {
		t.Errorf("hostile name: %+v", j)
	}
}

func TestParseGRES(t *testing.T) {
	tests := []struct {
		in   string
		want []GPUCount
	}{
		{"gpu:fake:4(S:0)", []GPUCount{{Type: "fake", Total: 4}}},
		{"gpu:a100:4(S:0-1),gpu:v100:2", []GPUCount{{Type: "a100", Total: 4}, {Type: "v100", Total: 2}}},
		{"gpu:4", []GPUCount{{Total: 4}}},
		{"gpu:fake:3(IDX:0-2)", []GPUCount{{Type: "fake", Total: 3}}},
		{"gpu:(null):0(IDX:N/A)", []GPUCount{{Total: 0}}},
		{"gres/gpu:fake=2", []GPUCount{{Type: "fake", Total: 2}}},
		{"cpu=1,mem=100M,node=1,billing=1,gres/gpu=2", []GPUCount{{Total: 2}}},
		{"cpu=2,gres/gpu=8,gres/gpu:a100=8", []GPUCount{{Type: "a100", Total: 8}}},
		{"gres:gpu:2", []GPUCount{{Total: 2}}},
		{"gres/gpu:a100:2", []GPUCount{{Type: "a100", Total: 2}}},
		{"gres:gpu:fake", []GPUCount{{Type: "fake", Total: 1}}},
		{"mps:100,gpu:v100:1(IDX:1),mps:0", []GPUCount{{Type: "v100", Total: 1}}},
		{"", []GPUCount{}},
		{"N/A", []GPUCount{}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, ParseGRES(tt.in)); d != "" {
			t.Errorf("ParseGRES(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"node[1-3,5]", []string{"node1", "node2", "node3", "node5"}, false},
		{"slm-a,slm-b", []string{"slm-a", "slm-b"}, false},
		{"gpu[01-02],cpu7", []string{"gpu01", "gpu02", "cpu7"}, false},
		{"r[1-2]-n[01-02]", []string{"r1-n01", "r1-n02", "r2-n01", "r2-n02"}, false},
		{"n[098-101]", []string{"n098", "n099", "n100", "n101"}, false},
		{"", nil, false},
		{"n[3-1]", nil, true},
		{"n[1-2", nil, true},
		{"n[0-999999999]", nil, true},
		{"n[a-b]", nil, true},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if (err != nil) != tt.wantErr || !cmp.Equal(got, tt.want) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestComment(t *testing.T) {
	c, err := Comment("j1", "K7Q2MX4P")
	if err != nil || c != "labpool:job=j1,owner=K7Q2MX4P" {
		t.Fatalf("Comment = %q, %v", c, err)
	}
	if j, o := ParseComment(c); j != "j1" || o != "K7Q2MX4P" {
		t.Errorf("ParseComment(%q) = %q, %q", c, j, o)
	}
	for _, bad := range [][2]string{{"j,1", "o"}, {"j1", "o,owner=x"}, {"", "o"}, {"j=1", "o"}, {"j 1", "o"}} {
		if _, err := Comment(bad[0], bad[1]); err == nil {
			t.Errorf("Comment(%q, %q) accepted", bad[0], bad[1])
		}
	}
	for _, c := range []string{"labpool:job=a,owner=b,owner=c", "labpool:owner=b,job=a", "xlabpool:job=a,owner=b", "labpool:job=a"} {
		if j, o := ParseComment(c); j != "" || o != "" {
			t.Errorf("ParseComment(%q) = %q, %q; want nothing", c, j, o)
		}
	}
}

func TestSlurmDuration(t *testing.T) {
	for in, want := range map[string]int64{"UNLIMITED": 0, "30": 1800, "1:00:00": 3600, "2-00:00:00": 172800, "5-12": 475200, "10:30": 630, "x": 0} {
		if got := slurmDuration(in); got != want {
			t.Errorf("slurmDuration(%q) = %d, want %d", in, got, want)
		}
	}
}
