//go:build ignore

// mkv2 writes v2.db, a replica as labpool wrote it at commit 99c5a0e (schema
// migrations 0001 and 0002), and v2.json, every row it holds as that
// labpool read it back. Run it in a work tree of that commit:
//
//	git worktree add /tmp/old 99c5a0e && cd /tmp/old
//	go run ./sync/store/testdata/mkv2.go -out /path/to/sync/store/testdata
//
// The replica holds this device's node record, jobs, folders, samples of
// every tier (some pruned, so cursors run ahead of the records), records
// replicated from two other members, a signed pool of four devices (one
// promoted to admin, one removed) and local settings.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"

	_ "modernc.org/sqlite"
)

// t0 is the replica's clock: every record is stamped from it.
var t0 = time.Date(2026, 11, 20, 9, 58, 0, 0, time.UTC)

func main() {
	out := flag.String("out", ".", "directory for v2.db and v2.json")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		log.Fatal(err)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out string) error {
	tmp, err := os.MkdirTemp("", "mkv2")
	check(err)
	defer os.RemoveAll(tmp)
	dbPath := filepath.Join(out, "v2.db")
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm"} {
		os.Remove(p)
	}
	db, err := store.Open(dbPath)
	check(err)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	ids := make([]*peer.Identity, 4)
	for i := range ids {
		ids[i], err = peer.LoadOrCreate(filepath.Join(tmp, fmt.Sprint(i)))
		check(err)
	}
	self := ids[0].ID.String()
	check(db.SetSetting(ctx, app.SettingSelfName, "gpu-box"))
	check(db.SetSetting(ctx, app.SettingSelfID, self))

	// The pool: this device creates it, three join with an invite, one is
	// made an admin and one is removed.
	clock := t0
	now := func() time.Time { return clock }
	m, err := pool.NewManager(ctx, pool.ManagerConfig{Identity: ids[0], Name: func() string { return "gpu-box" }, DB: db, Now: now, Log: logger})
	check(err)
	_, _, err = m.Create(ctx)
	check(err)
	clock = clock.Add(time.Second)
	_, code, err := m.Invite(ctx, pool.RoleMember, 3, time.Hour)
	check(err)
	names := []string{"", "ada-laptop", "bea-desktop", "cy-laptop"}
	for i := 1; i < 4; i++ {
		clock = clock.Add(time.Second)
		pub := ids[i].Cert.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
		rec, err := pool.NewJoin(code, pub, names[i], clock)
		check(err)
		raw, err := json.Marshal(rec)
		check(err)
		check(m.Receive(ctx, ids[i].ID, []json.RawMessage{raw}))
	}
	clock = clock.Add(time.Second)
	check(m.SetRole(ctx, ids[1].ID.String(), pool.RoleAdmin))
	clock = clock.Add(time.Second)
	check(m.Remove(ctx, ids[3].ID.String()))

	// This node's own records.
	gs, err := gpu.OpenLibrary(gpu.Simulated(8, self), gpu.DefaultConfig())
	check(err)
	defer gs.Close()
	hs := host.NewSampler(host.DefaultConfig())
	info, err := hs.Info(ctx)
	check(err)
	node := app.NodeRecord{
		Info:       agent.Info{ID: self, Name: "gpu-box", Host: info, GPUs: gs.Devices(), Version: "0.9.0", StartedAt: t0},
		Addresses:  []string{"192.168.1.20:7946", "[fd00::20]:7946"},
		Containers: true,
	}
	appendJSON(ctx, db, self, app.KindNode, "", t0, node)

	rec := history.NewRecorder(db, self, logger)
	var last agent.Sample
	for i := range 42 { // 17 minutes, a sample every 25 s: 1m means and one 15m mean
		st, err := hs.Sample(ctx)
		check(err)
		g, err := gs.Sample(ctx)
		check(err)
		last = agent.Sample{Time: t0.Add(time.Duration(i) * 25 * time.Second), Host: st, GPUs: g}
		check(rec.Record(ctx, last))
	}
	// The oldest 1 s samples go, as retention would drop them.
	_, err = db.Prune(ctx, history.KindSample1s, t0.Add(10*time.Minute))
	check(err)

	started := t0.Add(30 * time.Second)
	finished := t0.Add(9 * time.Minute)
	exit := 0
	devs := gs.Devices()
	jobList := []jobs.Job{
		{ID: "j-0001", Name: "train-resnet", Node: self, Owner: ids[1].ID.String(), Image: "pytorch/pytorch:2.5",
			Spec:  jobs.Spec{Image: "pytorch/pytorch:2.5", Cmd: []string{"python", "train.py"}, GPUs: 2},
			State: jobs.Exited, GPUs: []string{devs[0].UUID, devs[1].UUID}, GPUIndexes: []int{0, 1},
			Container: "c0ffee01", Created: t0, Started: &started, Finished: &finished, ExitCode: &exit,
			GPUSeconds: 2 * finished.Sub(started).Seconds(), SpecHash: "aa11"},
		{ID: "j-0002", Name: "notebook", Node: self, Owner: ids[2].ID.String(), Image: "jupyter/base-notebook",
			Spec: jobs.Spec{Image: "jupyter/base-notebook", GPUs: 1, Ports: []int{8888}}, State: jobs.Running,
			GPUs: []string{devs[2].UUID}, GPUIndexes: []int{2}, Container: "c0ffee02",
			Ports: map[int]int{8888: 41888}, Created: t0.Add(time.Minute), Started: &started, SpecHash: "bb22"},
		{ID: "j-0003", Name: "big-run", Node: self, Owner: self, Image: "nvcr.io/nvidia/pytorch:24.10-py3",
			Spec: jobs.Spec{Image: "nvcr.io/nvidia/pytorch:24.10-py3", GPUs: 8, Queue: true}, State: jobs.Queued, Created: t0.Add(2 * time.Minute),
			Error: "waiting for 8 GPUs", SpecHash: "cc33"},
	}
	for _, j := range jobList {
		appendJSON(ctx, db, self, app.KindJob, j.ID, j.Created, j)
	}
	// A job written twice: its newer version replaces the older.
	jobList[1].GPUSeconds = 420
	appendJSON(ctx, db, self, app.KindJob, jobList[1].ID, jobList[1].Created, jobList[1])
	check(db.SetSetting(ctx, "job-env:j-0002", `["JUPYTER_TOKEN=secret"]`))
	check(db.SetSetting(ctx, "policy", `{"max_gpus_per_job":8,"max_jobs_per_member":4,"allow_viewers":false}`))

	appendJSON(ctx, db, self, app.KindFolder, "datasets", t0, folders.Info{Name: "datasets", Mode: "ro", SizeBytes: 12 << 30, Files: 3400, Members: []string{ids[1].ID.String()}})
	appendJSON(ctx, db, self, app.KindFolder, "scratch", t0, folders.Info{Name: "scratch", Mode: "rw", SizeBytes: 1 << 20, Files: 2})
	check(db.SetSetting(ctx, "folders", `[{"name":"datasets","path":"/srv/datasets","mode":"ro"},{"name":"scratch","path":"/srv/scratch","mode":"rw"}]`))

	// Records replicated from two members, their cursors past what is held.
	for i, o := range []int{1, 2} {
		origin := ids[o].ID.String()
		var recs []store.Record
		n := app.NodeRecord{Info: agent.Info{ID: origin, Name: names[o], Host: info, Version: "0.9.0", StartedAt: t0}, Addresses: []string{fmt.Sprintf("192.168.1.%d:7946", 30+i)}}
		b, _ := json.Marshal(n)
		recs = append(recs, store.Record{Origin: origin, Seq: 7, Kind: app.KindNode, Time: t0, Data: b})
		for k := range 3 {
			s := last
			s.Time = t0.Add(time.Duration(k) * time.Minute)
			s.GPUs = nil
			s.GPUError = "no NVIDIA GPU found"
			b, _ := json.Marshal(s)
			recs = append(recs, store.Record{Origin: origin, Seq: uint64(20 + k), Kind: history.KindSample1m, Key: history.Key(s.Time), Time: s.Time, Data: b})
		}
		check(db.Put(ctx, recs))
	}
	check(db.Close())
	return dump(ctx, dbPath, filepath.Join(out, "v2.json"))
}

func appendJSON(ctx context.Context, db *store.DB, origin, kind, key string, t time.Time, v any) {
	b, err := json.Marshal(v)
	check(err)
	_, err = db.Append(ctx, origin, kind, key, t, b)
	check(err)
}

// Dump is every row of the replica, as the old labpool's API reads it; a
// record's data is given by its SHA-256.
type Dump struct {
	Schema      int                `json:"schema"`
	Records     []Rec              `json:"records"`
	Cursors     map[string]uint64  `json:"cursors"`
	Members     []store.MemberRow  `json:"members"`
	PoolRecords []store.PoolRecord `json:"pool_records"`
	Settings    map[string]string  `json:"settings"`
}

// Rec is a store.Record with the SHA-256 of its data.
type Rec struct {
	Origin     string    `json:"o"`
	Seq        uint64    `json:"s"`
	Kind       string    `json:"k"`
	Key        string    `json:"key"`
	Time       time.Time `json:"t"`
	DataSHA256 string    `json:"d_sha256"`
}

func dump(ctx context.Context, dbPath, out string) error {
	db, err := store.Open(dbPath)
	check(err)
	var d Dump
	d.Schema, err = db.SchemaVersion(ctx)
	check(err)
	origins, err := db.Origins(ctx)
	check(err)
	d.Cursors = map[string]uint64{}
	for _, o := range origins {
		recs, err := db.Since(ctx, o, 0, 0)
		check(err)
		for _, r := range recs {
			d.Records = append(d.Records, Rec{Origin: r.Origin, Seq: r.Seq, Kind: r.Kind, Key: r.Key, Time: r.Time,
				DataSHA256: fmt.Sprintf("%x", sha256.Sum256(r.Data))})
		}
		d.Cursors[o], err = db.Cursor(ctx, o)
		check(err)
	}
	d.Members, err = db.Members(ctx)
	check(err)
	d.PoolRecords, err = db.PoolRecords(ctx)
	check(err)
	check(db.Close())
	raw, err := sql.Open("sqlite", "file:"+dbPath)
	check(err)
	defer raw.Close()
	_, err = raw.ExecContext(ctx, `VACUUM`)
	check(err)
	rows, err := raw.QueryContext(ctx, `SELECT key, value FROM settings ORDER BY key`)
	check(err)
	d.Settings = map[string]string{}
	for rows.Next() {
		var k, v string
		check(rows.Scan(&k, &v))
		d.Settings[k] = v
	}
	check(rows.Err())
	b, err := json.MarshalIndent(d, "", "\t")
	check(err)
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
