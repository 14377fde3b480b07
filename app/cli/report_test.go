package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

func TestReportUsage(t *testing.T) {
	dir := t.TempDir()
	writeReplica(t, dir)
	for _, args := range [][]string{
		{"report", "--by", "team"},
		{"report", "--since", "forever"},
		{"report", "--json", "--csv"},
		{"report", "extra"},
	} {
		if code, _, stderr := run(t, Hooks{}, append([]string{"--data", dir}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, stderr, ExitUsage)
		}
	}
}

// TestReportFromReplica reads a report with no daemon running: a job of
// this machine granted GPU 0 for the last 30 minutes at 50% and 120 W (1 min
// samples), and another member's job still queued.
func TestReportFromReplica(t *testing.T) {
	dir := t.TempDir()
	db := writeReplica(t, dir)
	ctx := context.Background()
	now := time.Now().UTC()
	start := now.Add(-30 * time.Minute)
	// paula launched it: the record carries her proof, so the report names her.
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	priv := ed25519.NewKeyFromSeed(seed)
	paula := folders.DeviceID(priv.Public().(ed25519.PublicKey))
	if _, err := db.PutMember(ctx, store.MemberRow{ID: paula, Name: "paula", Version: 1, AddedAt: start, AddedBy: selfID}); err != nil {
		t.Fatal(err)
	}
	j := jobs.Job{Name: "=train", Node: selfID, Owner: paula, State: jobs.Running, GPUs: []string{"GPU-self"},
		GPUIndexes: []int{0}, Created: start, Started: &start, Spec: jobs.Spec{Env: []string{"SECRET=hunter2"}}}
	signer := jobs.LaunchSigner{Key: priv.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}
	var err error
	if j.OwnerProof, err = signer.Prove(selfID, j.Spec); err != nil {
		t.Fatal(err)
	}
	p, _ := jobs.DecodeProof(j.OwnerProof)
	j.ID = p.JobID()
	queued := jobs.Job{ID: "job-2", Name: "wait", Node: selfID, Owner: selfID, State: jobs.Queued, Created: start}
	for _, jj := range []jobs.Job{j, queued} {
		if _, err := db.Append(ctx, selfID, app.KindJob, jj.ID, now, mustJSON(t, jj)); err != nil {
			t.Fatal(err)
		}
	}
	for m := now.Add(-2 * time.Hour).Truncate(time.Minute); m.Before(now); m = m.Add(time.Minute) {
		s := agent.Sample{Time: m, GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-self", UtilPercent: 50, PowerW: 120}}}
		if _, err := db.Append(ctx, selfID, history.KindSample1m, history.Key(m), m, mustJSON(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "report", "--since", "2h", "--by", "job", "--csv")
	if code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "hunter2") {
		t.Errorf("the report shows a job's environment:\n%s", stdout)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv: %v\n%s\nwant a header, one job and the totals", err, stdout)
	}
	row := rows[1]
	if row[0] != j.ID || row[1] != "'=train" || row[8] != app.EnergyPower {
		t.Errorf("row %q: want "+j.ID+", its name kept from reading as a formula, energy from power", row)
	}
	// 0.5 h granted (a minute's sample of the open minute may be missing),
	// half of it used, 0.06 kWh (120 W for 0.5 h).
	for col, want := range map[int]float64{2: 0.5, 3: 0.25, 4: 0, 6: 0.06} {
		got, err := strconv.ParseFloat(row[col], 64)
		if err != nil || math.Abs(got-want) > want*0.05+0.001 {
			t.Errorf("%s = %s, want about %v", rows[0][col], row[col], want)
		}
	}

	code, stdout, stderr = run(t, Hooks{}, "--data", dir, "report", "--since", "2h")
	if code != ExitOK || !strings.Contains(stdout, "MEMBER") || !strings.Contains(stdout, "paula") || !strings.Contains(stdout, "total") ||
		!strings.Contains(stdout, "Counted: GPU-h: jobs, shares (fraction), MIG (fraction), cluster jobs; reserved-unused: reservations.") {
		t.Errorf("report table: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, Hooks{}, "--data", dir, "report", "--since", "2h", "--json")
	if code != ExitOK || !strings.Contains(stdout, `"includes": [`) || !strings.Contains(stdout, `"reservations"`) || !strings.Contains(stdout, `"cluster jobs"`) {
		t.Errorf("report JSON lacks its columns: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestWriteReport(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rep := app.Report{Since: since, Until: since.Add(7 * 24 * time.Hour), By: app.ReportByNode, StepSeconds: 60,
		Rows: []app.ReportRow{{Key: "N1", Label: "dgx1", GPUHoursGranted: 12.5, GPUHoursUsed: 6.25, IdleGrantedHours: 1,
			EnergyKWh: 3.456, EnergyTotalKWh: 4, EnergySource: app.EnergyCounter}},
		Totals: app.ReportRow{Label: "total", GPUHoursGranted: 12.5, GPUHoursUsed: 6.25, IdleGrantedHours: 1, EnergyKWh: 3.456,
			EnergyTotalKWh: 4, EnergySource: app.EnergyCounter}}
	var b bytes.Buffer
	if err := writeReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "by node (samples of 60s)") || !strings.Contains(lines[1], "MACHINE") {
		t.Fatalf("report:\n%s", b.String())
	}
	for _, w := range []string{"dgx1", "12.50", "6.25", "1.00", "3.46", "4.00", "counter"} {
		if !strings.Contains(lines[2], w) {
			t.Errorf("row %q lacks %q", lines[2], w)
		}
	}
}

// The table says which holder kinds its figures count, and lists the
// records a rule cut.
func TestWriteReportLegend(t *testing.T) {
	rep := app.Report{By: app.ReportByMember, Columns: app.ReportColumns(), Totals: app.ReportRow{Label: "total", ReservedUnusedHours: 1.5},
		Adjusted: []app.ReportAdjustment{{Node: "N1", NodeName: "hpc-login", Job: "job-1", Rule: app.RuleClusterGPUs, Detail: "8000 GPUs claimed, the cluster has 8"}}, AdjustedCount: 3}
	var b bytes.Buffer
	if err := writeReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"RESERVED UNUSED H", "1.50",
		"Counted: GPU-h: jobs, shares (fraction), MIG (fraction), cluster jobs; reserved-unused: reservations.",
		`Cut by rule "cluster job gpus at most the cluster's": job-1 of hpc-login: 8000 GPUs claimed, the cluster has 8`,
		"(2 more cut"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
}
