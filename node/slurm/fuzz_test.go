package slurm

import (
	"strings"
	"testing"
)

// The parsers read another program's output, in which a job's name, a
// comment or a node's reason can be anything a cluster user typed.

func FuzzParseSqueue(f *testing.F) {
	for _, n := range []string{"squeue-22.05-running.json", "squeue-22.05-ended.json", "squeue-23.11-v0.0.40.json"} {
		f.Add(readFixture(f, n))
	}
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"number":1e30},"job_state":[],"nodes":"n[1-99999999]","exit_code":{"return_code":"x"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, jobs, err := ParseSqueue(b)
		if err != nil {
			return
		}
		for _, j := range jobs {
			taskState(j)
			if len(j.Nodes) > maxHosts {
				t.Fatalf("%d nodes", len(j.Nodes))
			}
		}
	})
}

func FuzzParseSinfo(f *testing.F) {
	for _, n := range []string{"sinfo-22.05-busy.json", "sinfo-23.11-v0.0.40.json"} {
		f.Add(readFixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, nodes, err := ParseSinfo(b)
		if err != nil {
			return
		}
		BuildCluster(meta, nodes, nil, nil, nil)
	})
}

func FuzzParseScontrolJobs(f *testing.F) {
	for _, n := range []string{"scontrol-job-22.05-running.txt", "scontrol-job-22.05-failed.txt", "scontrol-partition-22.05.txt"} {
		f.Add(readFixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseScontrolJobs(b)
		ParsePartitions(b)
		ParseNodeAddrs(b)
	})
}

func FuzzParseGRES(f *testing.F) {
	for _, s := range []string{"gpu:a100:4(S:0-1),gpu:v100:2", "cpu=2,gres/gpu=8,gres/gpu:a100=8", "gres:gpu:fake", "gpu:99999999G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range ParseGRES(s) {
			if g.Total < 0 {
				t.Fatalf("ParseGRES(%q): %+v", s, g)
			}
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"node[1-3,5]", "r[1-2]-n[01-02]", "a,b", "n[0-99999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err == nil && len(names) > maxHosts {
			t.Fatalf("%d names", len(names))
		}
	})
}

func FuzzParseComment(f *testing.F) {
	f.Add("labpool:job=j1,owner=DEV")
	f.Fuzz(func(t *testing.T, s string) {
		j, o := ParseComment(s)
		if j == "" {
			return
		}
		c, err := Comment(j, o)
		if err != nil || c != strings.TrimSpace(s) {
			t.Fatalf("ParseComment(%q) = %q, %q, which marks as %q, %v", s, j, o, c, err)
		}
	})
}

func FuzzParseSqueueText(f *testing.F) {
	f.Add(textFixture(f, "squeue-22.05-text.txt", fixedMarkers))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, j := range ParseSqueueText(b, fixedMarkers) {
			if !validHandle(j.ID) || strings.Contains(j.Name, fixedMarkers.Name) {
				t.Fatalf("job %+v", j)
			}
			taskState(j)
		}
	})
}
