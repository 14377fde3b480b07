package store_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// The helper process of TestSIGKILLWhileWriting is this test binary, run
// again with these variables set.
const (
	crashChildEnv = "LABPOOL_STORE_CRASH_CHILD" // the replica's path
	crashAcksEnv  = "LABPOOL_STORE_CRASH_ACKS"  // the file the child acknowledges commits in
	crashSeedEnv  = "LABPOOL_STORE_CRASH_SEED"  // the seed of the child's writes
)

// crashLocal is the origin of the child's own records; crashPeers are the
// origins whose records it receives.
const crashLocal = "LOCAL"

var crashPeers = []string{"PEER-A", "PEER-B", "PEER-C"}

// crashSetting is the local setting the child rewrites with a counter.
const crashSetting = "crash.counter"

// TestSIGKILLWhileWriting (T30, T35) kills a process that writes the
// replica with SIGKILL at random moments, LABPOOL_CRASH_KILLS times
// (default 200; the plan's long run is 1,000), and opens the replica after
// every kill as the next start would: PRAGMA integrity_check must pass,
// every record whose Append or Receive returned before the kill must be
// held (at that seq or a later one), the cursors must not fall back, a
// local setting must hold its last acknowledged value or a later one, and
// the child's own seqs must only grow across the kills (a seq given twice
// would make peers skip the second record). The child writes control
// records (Append, FULL), history batches (NORMAL), records received from
// peers and a setting; about one kill in eight lands while it opens the
// file (WAL recovery, migration). LABPOOL_CRASH_SEED replays a run's
// moments.
func TestSIGKILLWhileWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a helper process hundreds of times")
	}
	kills := envInt("LABPOOL_CRASH_KILLS", 200)
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LABPOOL_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d kills, LABPOOL_CRASH_SEED=%d", kills, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	path := filepath.Join(dir, "replica.db")
	acksPath := filepath.Join(dir, "acks")
	if err := os.WriteFile(acksPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ledger := &crashLedger{path: acksPath, setting: -1, held: map[crashKey]uint64{}, cursors: map[string]uint64{}}
	var inOpen int
	for i := range kills {
		early := rng.IntN(8) == 0
		delay := time.Duration(rng.IntN(60_000)) * time.Microsecond
		if early {
			delay = time.Duration(rng.IntN(30_000)) * time.Microsecond
		}
		if killWriter(t, path, acksPath, seed+uint64(i), early, delay) {
			inOpen++
		}
		if err := trimTorn(acksPath); err != nil {
			t.Fatal(err)
		}
		if err := ledger.check(path); err != nil {
			t.Fatalf("after kill %d (LABPOOL_CRASH_SEED=%d): %v", i+1, seed, err)
		}
	}
	acked := ledger.n
	t.Logf("%d kills (%d before the child reported the replica open); %d commits acknowledged, every one held", kills, inOpen, acked)
	if acked == 0 {
		t.Fatal("the child acknowledged no commit: the kills tested nothing")
	}
}

// killWriter starts the child and kills it with SIGKILL: delay after its
// start when early, else delay after it reports the replica open. It
// reports whether the kill came before that report.
func killWriter(t *testing.T, path, acksPath string, seed uint64, early bool, delay time.Duration) bool {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashAcksEnv+"="+acksPath,
		crashSeedEnv+"="+strconv.FormatUint(seed, 10))
	cmd.ExtraFiles = []*os.File{pw} // fd 3: one byte once the replica is open
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the writer: %v", err)
	}
	pw.Close()
	opened := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := pr.Read(b[:])
		opened <- n == 1
	}()
	before := early
	if early {
		time.Sleep(delay)
		select {
		case <-opened:
			before = false
		default:
		}
	} else if !<-opened {
		cmd.Wait()
		t.Fatalf("the writer exited before opening the replica: %s", stderr.Bytes())
	} else {
		time.Sleep(delay)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer ended before the kill (%v): %s", err, stderr.Bytes())
	}
	return before
}

// crashLedger is what the child acknowledged so far, read from its
// acknowledgements a kill at a time.
type crashLedger struct {
	path      string
	off       int64               // bytes of the acknowledgements read
	n         int                 // acknowledgements read
	lastLocal uint64              // the last seq acknowledged of crashLocal
	setting   int                 // the last value of crashSetting acknowledged; -1: none
	held      map[crashKey]uint64 // per record, the highest seq acknowledged
	cursors   map[string]uint64   // per origin, the highest seq acknowledged
}

type crashKey struct{ origin, kind, key string }

// check reads the acknowledgements written since the last check, then
// opens the replica at path and checks it against all of them.
func (l *crashLedger) check(path string) error {
	if err := l.read(); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := store.Open(path)
	if err != nil {
		return fmt.Errorf("open the replica: %w", err)
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return err
	}
	for k, seq := range l.held {
		r, ok, err := db.Latest(ctx, k.origin, k.kind, k.key)
		if err != nil {
			return err
		}
		if !ok || r.Seq < seq {
			return fmt.Errorf("%s/%s/%s seq %d acknowledged, replica holds %v (seq %d)", k.origin, k.kind, k.key, seq, ok, r.Seq)
		}
	}
	for origin, seq := range l.cursors {
		cur, err := db.Cursor(ctx, origin)
		if err != nil {
			return err
		}
		if cur < seq {
			return fmt.Errorf("cursor of %s is %d, below the acknowledged seq %d", origin, cur, seq)
		}
	}
	if l.setting >= 0 {
		v, ok, err := db.Setting(ctx, crashSetting)
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(v); !ok || err != nil || n < l.setting {
			return fmt.Errorf("setting %s is %q (%v), acknowledged %d", crashSetting, v, ok, l.setting)
		}
	}
	return nil
}

// read takes in the acknowledgements written since the last read: a
// local seq must be above every one before it.
func (l *crashLedger) read() error {
	acks, n, err := readAcks(l.path, l.off)
	if err != nil {
		return err
	}
	l.off += n
	for _, a := range acks {
		l.n++
		switch a.op {
		case "A", "R":
			if a.op == "A" {
				if a.seq <= l.lastLocal {
					return fmt.Errorf("ack %d: %s given seq %d after seq %d", l.n, crashLocal, a.seq, l.lastLocal)
				}
				l.lastLocal = a.seq
			}
			k := crashKey{a.origin, a.kind, a.key}
			l.held[k] = max(l.held[k], a.seq)
			l.cursors[a.origin] = max(l.cursors[a.origin], a.seq)
		case "S":
			l.setting = int(a.seq)
		}
	}
	return nil
}

// trimTorn cuts the acknowledgement a kill tore off the end of the file
// at path, so that the next life writes after a whole line.
func trimTorn(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, int64(bytes.LastIndexByte(data, '\n')+1))
}

// crashAck is one line of the acknowledgements: "A origin kind key seq"
// (Append), "R origin kind key seq" (Receive) or "S n" (the setting).
type crashAck struct {
	op, origin, kind, key string
	seq                   uint64
}

// readAcks reads the complete lines of the acknowledgements from off on,
// and how many bytes they take; a line the kill cut is left out.
func readAcks(path string, off int64) ([]crashAck, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, off, 1<<62))
	if err != nil {
		return nil, 0, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var acks []crashAck
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var a crashAck
		var err error
		switch {
		case len(f) == 5 && (f[0] == "A" || f[0] == "R"):
			a = crashAck{op: f[0], origin: f[1], kind: f[2], key: f[3]}
			if a.key == "-" {
				a.key = ""
			}
			a.seq, err = strconv.ParseUint(f[4], 10, 64)
		case len(f) == 2 && f[0] == "S":
			a.op = "S"
			a.seq, err = strconv.ParseUint(f[1], 10, 64)
		default:
			err = fmt.Errorf("bad line")
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read acks: %q: %v", sc.Text(), err)
		}
		acks = append(acks, a)
	}
	return acks, int64(len(data)), sc.Err()
}

// TestCrashWriter is the helper process of TestSIGKILLWhileWriting: it
// writes the replica until killed, acknowledging each commit.
func TestCrashWriter(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("the helper process of TestSIGKILLWhileWriting")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	if err := crashWrite(path, os.Getenv(crashAcksEnv), seed); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// crashWrite opens the replica, says so on fd 3 and writes forever.
func crashWrite(path, acksPath string, seed uint64) error {
	ctx := context.Background()
	acks, err := os.OpenFile(acksPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	db, err := store.Open(path)
	if err != nil {
		return err
	}
	ready := os.NewFile(3, "ready")
	if _, err := ready.Write([]byte{1}); err != nil {
		return err
	}
	ready.Close()
	next := map[string]uint64{}
	for _, o := range crashPeers {
		if next[o], err = db.Cursor(ctx, o); err != nil {
			return err
		}
	}
	counter := 0
	if v, ok, err := db.Setting(ctx, crashSetting); err != nil {
		return err
	} else if ok {
		counter, _ = strconv.Atoi(v)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := 0; ; i++ {
		var line []byte
		switch op := rng.IntN(8); {
		case op < 3: // a control record of our own
			kind := []string{schema.KindJob, schema.KindFolder, schema.KindAlert}[op]
			key := fmt.Sprintf("k%d", rng.IntN(64))
			r, err := db.Append(ctx, crashLocal, kind, key, t0.Add(time.Duration(i)*time.Millisecond), sample(i, 40+rng.IntN(400)))
			if err != nil {
				return err
			}
			line = fmt.Appendf(nil, "A %s %s %s %d\n", r.Origin, r.Kind, r.Key, r.Seq)
		case op < 5: // a batch of history of our own
			recs := make([]store.Record, 1+rng.IntN(20))
			for j := range recs {
				recs[j] = store.Record{Kind: schema.KindSample1s, Key: strconv.Itoa(rng.IntN(512)),
					Time: t0.Add(time.Duration(i) * time.Second), Data: sample(i, 200)}
			}
			out, err := db.AppendBatch(ctx, crashLocal, recs)
			if err != nil {
				return err
			}
			for _, r := range out {
				line = fmt.Appendf(line, "A %s %s %s %d\n", r.Origin, r.Kind, r.Key, r.Seq)
			}
		case op < 7: // records received from a peer, some of them again
			o := crashPeers[rng.IntN(len(crashPeers))]
			recs := make([]store.Record, 1+rng.IntN(10))
			for j := range recs {
				next[o]++
				recs[j] = store.Record{Origin: o, Seq: next[o], Kind: schema.KindJob, Key: fmt.Sprintf("j%d", rng.IntN(32)),
					Time: t0, Data: sample(j, 100)}
			}
			if refused, err := db.Receive(ctx, recs); err != nil {
				return err
			} else if len(refused) > 0 {
				return fmt.Errorf("receive: refused %+v", refused[0])
			}
			for _, r := range recs {
				line = fmt.Appendf(line, "R %s %s %s %d\n", r.Origin, r.Kind, r.Key, r.Seq)
			}
		default:
			counter++
			if err := db.SetSetting(ctx, crashSetting, strconv.Itoa(counter)); err != nil {
				return err
			}
			line = fmt.Appendf(nil, "S %d\n", counter)
		}
		if _, err := acks.Write(line); err != nil {
			return err
		}
	}
}

// envInt is the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
