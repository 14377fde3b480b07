//go:build unix

package peer_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// The helper process of TestSIGKILLWhileCreatingIdentities is this test
// binary, run again with these variables set.
const (
	idChildEnv = "LABPOOL_PEER_CRASH_CHILD" // the directory the child works in
	idSeedEnv  = "LABPOOL_PEER_CRASH_SEED"  // the seed of the child's work
)

// TestSIGKILLWhileCreatingIdentities (T32) kills a process that creates
// and loads identities with SIGKILL at random moments (up to 40 ms after
// it starts), LABPOOL_CRASH_KILLS
// times (default 200; the plan's long run is 1,000), and after every kill
// loads each identity as the next start would. The child loads the
// machine's identity (created by its first life), creates fresh ones in
// new directories, and re-issues the certificate of one whose cert.pem it
// removed; it acknowledges each on its stdout once LoadOrCreate returned.
// Every identity must load: the machine's with the ID it always had, an
// acknowledged one with its acknowledged ID, one cut by the kill either
// with a whole key or as a new identity, never ErrCorrupt (a half-written
// file). LABPOOL_CRASH_SEED replays a run's moments.
func TestSIGKILLWhileCreatingIdentities(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a helper process hundreds of times")
	}
	kills := 200
	if v, err := strconv.Atoi(os.Getenv("LABPOOL_CRASH_KILLS")); err == nil && v > 0 {
		kills = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LABPOOL_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d kills, LABPOOL_CRASH_SEED=%d", kills, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	dir := t.TempDir()
	acked := map[string]peer.ID{} // directory -> the ID acknowledged in it
	var checked, cut int
	for i := range kills {
		out := killIdentityWriter(t, dir, seed+uint64(i), time.Duration(rng.IntN(40_000))*time.Microsecond)
		acks, err := parseIDAcks(out)
		if err != nil {
			t.Fatal(err)
		}
		for d, id := range acks {
			if old, ok := acked[d]; ok && old != id {
				t.Fatalf("kill %d (LABPOOL_CRASH_SEED=%d): %s acknowledged as %v, then as %v", i+1, seed, d, old, id)
			}
			acked[d] = id
		}
		// Every directory the child touched in this life, acknowledged or cut.
		dirs, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("l%d-*", seed+uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range append(dirs, filepath.Join(dir, "machine"), filepath.Join(dir, "reissue")) {
			if _, err := os.Stat(d); err != nil {
				continue // a life killed before it made d
			}
			id, err := peer.LoadOrCreate(d)
			if err != nil {
				t.Fatalf("kill %d (LABPOOL_CRASH_SEED=%d): load %s: %v", i+1, seed, filepath.Base(d), err)
			}
			checked++
			want, ok := acked[filepath.Base(d)]
			if !ok {
				cut++
				continue
			}
			if id.ID != want {
				t.Fatalf("kill %d (LABPOOL_CRASH_SEED=%d): %s loads as %v, acknowledged as %v", i+1, seed, filepath.Base(d), id.ID, want)
			}
		}
		// The load after a kill removes what the kill left: a temporary
		// file of the key holds a private key nobody uses.
		stale, err := filepath.Glob(filepath.Join(dir, "*", ".*.tmp*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) > 0 {
			t.Fatalf("kill %d (LABPOOL_CRASH_SEED=%d): %d temporary files left after the next load, first %s", i+1, seed, len(stale), stale[0])
		}
	}
	t.Logf("%d kills: %d identities acknowledged, %d loads checked (%d of an identity the kill cut)", kills, len(acked), checked, cut)
	if len(acked) < 2 {
		t.Fatal("the child acknowledged almost nothing: the kills tested nothing")
	}
}

// killIdentityWriter runs the child in dir and kills it with SIGKILL delay
// after it says it has started (its first line); it returns the child's
// stdout.
func killIdentityWriter(t *testing.T, dir string, seed uint64, delay time.Duration) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdentityWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), idChildEnv+"="+dir, idSeedEnv+"="+strconv.FormatUint(seed, 10))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the identity writer: %v", err)
	}
	var out bytes.Buffer
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for first := true; ; {
			n, err := stdout.Read(buf)
			out.Write(buf[:n])
			if first && bytes.IndexByte(out.Bytes(), '\n') >= 0 {
				close(started)
				first = false
			}
			if err != nil {
				if first {
					close(started)
				}
				return
			}
		}
	}()
	<-started
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the identity writer ended before the kill (%v): %s", err, stderr.Bytes())
	}
	return out.Bytes()
}

// parseIDAcks reads the child's complete "ack <dir> <id>" lines; other
// lines (the test framework's) and a line the kill cut are left out.
func parseIDAcks(out []byte) (map[string]peer.ID, error) {
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1]
	} else {
		out = nil
	}
	acks := map[string]peer.ID{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			continue
		}
		id, err := peer.ParseID(f[2])
		if err != nil {
			return nil, fmt.Errorf("ack %q: %w", sc.Text(), err)
		}
		if old, ok := acks[f[1]]; ok && old != id {
			return nil, fmt.Errorf("%s acknowledged as %v, then as %v in one life", f[1], old, id)
		}
		acks[f[1]] = id
	}
	return acks, sc.Err()
}

// TestIdentityWriter is the helper process of
// TestSIGKILLWhileCreatingIdentities: it creates and loads identities
// until killed, acknowledging each on stdout.
func TestIdentityWriter(t *testing.T) {
	dir := os.Getenv(idChildEnv)
	if dir == "" {
		t.Skip("the helper process of TestSIGKILLWhileCreatingIdentities")
	}
	seed, _ := strconv.ParseUint(os.Getenv(idSeedEnv), 10, 64)
	if err := writeIdentities(dir, seed); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// writeIdentities loads the machine's identity, then creates new ones and
// re-issues a certificate, forever.
func writeIdentities(dir string, seed uint64) error {
	ack := func(name string, id *peer.Identity) error {
		_, err := fmt.Fprintf(os.Stdout, "ack %s %s\n", name, id.ID)
		return err
	}
	if _, err := fmt.Fprintln(os.Stdout, "started"); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 4))
	for k := 0; ; k++ {
		name := fmt.Sprintf("l%d-%d", seed, k)
		switch rng.IntN(4) {
		case 0:
			name = "machine"
		case 1:
			name = "reissue"
			err := os.Remove(filepath.Join(dir, name, peer.CertFile))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		id, err := peer.LoadOrCreate(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := ack(name, id); err != nil {
			return err
		}
	}
}
