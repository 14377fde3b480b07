//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCopy copies trees in all three directions between namespaces —
// laptop to machine, machine to machine (directly), machine to laptop — and
// checks both trees match, that a re-copy sends nothing, and that a
// read-only share refuses writes.
func TestCopy(t *testing.T) {
	l := newLAN(t, "gpu1", "gpu2", "laptop")
	gpu1, gpu2, laptop := l.host("gpu1"), l.host("gpu2"), l.host("laptop")
	gpu1.agent()
	gpu2.agent()
	const webAddr = "127.0.0.1:7421"
	laptop.start("web", "--listen", webAddr, "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, gpu2, laptop)
	waitFor(t, 20*time.Second, "all online", func() error { return liveNodes(laptop, "gpu1", "gpu2") })
	waitFor(t, 20*time.Second, "gpu2 follows gpu1", func() error { return liveNodes(gpu2, "gpu1", "laptop") })

	base := t.TempDir()
	src := filepath.Join(base, "project")
	makeTree(t, src)
	data, scratch := filepath.Join(base, "gpu1-data"), filepath.Join(base, "gpu2-scratch")
	makeTree(t, data)
	os.MkdirAll(scratch, 0o755)
	mustCLI(t, gpu1, "share", "data", data)
	mustCLI(t, gpu2, "share", "--rw", "scratch", scratch)

	t.Run("laptop to machine", func(t *testing.T) {
		out := mustCLI(t, laptop, "cp", src, "gpu2:scratch/")
		t.Logf("%s", strings.TrimSpace(out))
		sameFiles(t, src, filepath.Join(scratch, "project"))
		// The local path was offered to gpu2 for this copy alone: once it
		// ended, gpu2 can no longer read it.
		offers := regexp.MustCompile(`offering a local path for one copy.*? share=(xfer-[0-9a-f]+)`).FindAllStringSubmatch(laptop.logText(), -1)
		if len(offers) == 0 {
			t.Fatal("the laptop did not log the share it offered")
		}
		share := "laptop:" + offers[len(offers)-1][1]
		waitFor(t, 10*time.Second, "the offer withdrawn", func() error {
			if out, errOut, code := gpu2.cli("ls", share); code == 0 || !strings.Contains(errOut, "no such shared folder") {
				return fmt.Errorf("ls %s: exit %d %s%s", share, code, out, errOut)
			}
			return nil
		})
	})
	t.Run("ls", func(t *testing.T) {
		out := mustCLI(t, laptop, "ls", "gpu1:data")
		if !regexp.MustCompile(`(?m)^drwx.*\sdeep/$`).MatchString(out) || !regexp.MustCompile(`(?m)^-rw.*\sreadme\.txt$`).MatchString(out) {
			t.Errorf("ls gpu1:data:\n%s", out)
		}
	})
	t.Run("machine to machine", func(t *testing.T) {
		out := mustCLI(t, laptop, "cp", "gpu1:data", "gpu2:scratch/from-gpu1")
		t.Logf("%s", strings.TrimSpace(out))
		sameFiles(t, data, filepath.Join(scratch, "from-gpu1"))
	})
	t.Run("folder sizes follow copies", func(t *testing.T) {
		// gpu2:scratch now holds two copies of the 67 MiB tree: its record,
		// republished when a copy into it ends, says so on the laptop.
		waitFor(t, 10*time.Second, "scratch's new size on the laptop", func() error {
			fs, err := laptop.client().Folders(context.Background())
			if err != nil {
				return err
			}
			for _, f := range fs {
				if f.NodeName == "gpu2" && f.Name == "scratch" {
					if f.Files != 14 {
						return fmt.Errorf("gpu2:scratch listed with %d files, %d bytes", f.Files, f.SizeBytes)
					}
					return nil
				}
			}
			return fmt.Errorf("gpu2:scratch not listed")
		})
	})
	t.Run("machine to laptop", func(t *testing.T) {
		dst := filepath.Join(base, "back")
		os.Mkdir(dst, 0o755)
		out := mustCLI(t, laptop, "cp", "gpu2:scratch/from-gpu1", dst+"/")
		t.Logf("%s", strings.TrimSpace(out))
		sameFiles(t, data, filepath.Join(dst, "from-gpu1"))
		again := mustCLI(t, laptop, "cp", "gpu2:scratch/from-gpu1", dst+"/")
		if !strings.Contains(again, "(0 B sent)") {
			t.Errorf("a re-copy of an unchanged tree sent data: %s", again)
		}
	})
	t.Run("members only: the serving machine enforces a share's members", func(t *testing.T) {
		me, err := nodeByName(gpu1, "laptop")
		if err != nil {
			t.Fatal(err)
		}
		private := filepath.Join(base, "gpu1-private")
		os.MkdirAll(private, 0o755)
		os.WriteFile(filepath.Join(private, "secret.txt"), []byte("for the laptop only\n"), 0o600)
		mustCLI(t, gpu1, "share", "--members", me.ID, "private", private)
		defer mustCLI(t, gpu1, "unshare", "private")
		if out, errOut, code := laptop.cli("ls", "gpu1:private"); code != 0 || !strings.Contains(out, "secret.txt") {
			t.Errorf("the member could not list it: exit %d %s%s", code, out, errOut)
		}
		if out, errOut, code := gpu2.cli("ls", "gpu1:private"); code == 0 || strings.Contains(out, "secret.txt") {
			t.Errorf("a non-member listed it: exit %d %s%s", code, out, errOut)
		}
		// gpu2 asks for a copy out of it: gpu1 checks gpu2, which is not
		// on the list, whoever receives.
		_, errOut, code := gpu2.cli("cp", "gpu1:private", "gpu2:scratch/stolen")
		if code == 0 {
			t.Errorf("a non-member copied out of a members-only share")
		}
		if _, err := os.Stat(filepath.Join(scratch, "stolen")); err == nil {
			t.Errorf("the non-member received the share: %s", errOut)
		}
		// The laptop asks gpu2 to pull it: gpu1 checks the laptop (its
		// grant), not gpu2, and gpu2 checks the laptop's right to write.
		if out, errOut, code := laptop.cli("cp", "gpu1:private", "gpu2:scratch/for-laptop"); code != 0 {
			t.Errorf("the member's copy to another machine: exit %d %s%s", code, out, errOut)
		}
		t.Logf("copy to a non-member: exit %d: %s", code, strings.TrimSpace(errOut))
	})
	t.Run("browser: browse and copy", func(t *testing.T) {
		waitFor(t, 10*time.Second, "the folders listed on the laptop", func() error {
			out, _, _ := laptop.cli("folders")
			if !strings.Contains(out, "gpu1:data") {
				return fmt.Errorf("folders: %s", out)
			}
			return nil
		})
		script := filepath.Join(repoRoot(), "frontend", "e2e", "folders.mjs")
		mine := filepath.Join(base, "laptop-notes")
		os.MkdirAll(mine, 0o755)
		cmd := exec.Command("ip", "netns", "exec", laptop.ns, "node", script, "--url", laptop.webURL(),
			"--share-name", "notes", "--share-path", mine,
			"--folder", "gpu1:data", "--expect-entry", "readme.txt", "--src", "gpu1:data", "--dst", "gpu2:scratch/from-ui",
			"--screenshot", filepath.Join(artifacts(t), "folders.png"))
		cmd.Dir = filepath.Join(repoRoot(), "frontend")
		out, err := cmd.CombinedOutput()
		t.Logf("playwright: %s", strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("browser folders test: %v", err)
		}
		sameFiles(t, data, filepath.Join(scratch, "from-ui"))
		// The folder shared from the window is this machine's, for the pool.
		if out := mustCLI(t, gpu1, "folders"); !strings.Contains(out, "laptop:notes") {
			t.Errorf("the folder shared in the window is not listed on gpu1:\n%s", out)
		}
	})
	// starve copies 1.5 GiB from gpu1 to gpu2 and checks that control
	// requests to gpu1 and telemetry of both stay on time meanwhile.
	starve := func(t *testing.T) {
		os.MkdirAll(filepath.Join(data, "big"), 0o755)
		writeRandom(t, filepath.Join(data, "big", "weights.bin"), 1536<<20)
		defer os.RemoveAll(filepath.Join(data, "big"))
		defer os.RemoveAll(filepath.Join(scratch, "big"))
		// A control request that crosses to gpu1, the busy sender.
		ls := func() time.Duration {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := laptop.client().Ls(ctx, "gpu1", "data", ""); err != nil {
				t.Errorf("ls gpu1:data: %v", err)
			}
			return time.Since(start)
		}
		var idle time.Duration
		for range 5 {
			idle = max2(idle, ls())
		}
		done := make(chan string, 1)
		start := time.Now()
		go func() {
			out, errOut, code := laptop.cli("cp", "-q", "gpu1:data/big", "gpu2:scratch/")
			done <- fmt.Sprintf("exit %d %s%s", code, out, errOut)
		}()
		var worst time.Duration
		var asked int
		var res string
	watch:
		for {
			select {
			case res = <-done:
				break watch
			case <-time.After(200 * time.Millisecond):
				worst = max2(worst, ls())
				asked++
			}
		}
		took := time.Since(start)
		t.Logf("1.5 GiB machine to machine in %v: %s; %d control requests to the sender, slowest %v (idle %v)",
			took.Round(time.Millisecond), strings.TrimSpace(res), asked, worst.Round(time.Millisecond), idle.Round(time.Millisecond))
		if !strings.HasPrefix(res, "exit 0") {
			t.Fatalf("copy: %s", res)
		}
		if worst > time.Second {
			t.Errorf("a control request to the sending machine took %v during the copy", worst)
		}
		// Telemetry of both ends kept flowing to the laptop: samples come
		// every second.
		checkGapsSince(t, laptop, "gpu1", start.Add(-3*time.Second), 2500*time.Millisecond)
		checkGapsSince(t, laptop, "gpu2", start.Add(-3*time.Second), 2500*time.Millisecond)
	}
	t.Run("a copy does not starve telemetry or control", starve)
	t.Run("nor over QUIC, where TCP is blocked", func(t *testing.T) {
		gpu1.kill()
		gpu1.env = append(gpu1.env, "LABPOOL_DATA_PATH=quic")
		gpu1.agent()
		gpu1.waitDaemon()
		waitFor(t, 20*time.Second, "gpu1 back", func() error { return liveNodes(laptop, "gpu1") })
		waitFor(t, 20*time.Second, "gpu2 sees gpu1 back", func() error { return liveNodes(gpu2, "gpu1") })
		starve(t)
	})
	t.Run("read-only share refuses writes", func(t *testing.T) {
		_, errOut, code := laptop.cli("cp", src, "gpu1:data/")
		if code != 1 || !strings.Contains(errOut, "read-only") {
			t.Errorf("copy into a read-only share: exit %d %q", code, errOut)
		}
	})
	t.Run("the list of copies outlives a restart", func(t *testing.T) {
		before, err := laptop.client().Transfers(context.Background())
		if err != nil || len(before) < 5 {
			t.Fatalf("%d copies listed before the restart (%v)", len(before), err)
		}
		laptop.kill()
		laptop.start("web", "--listen", webAddr, "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
		laptop.waitDaemon()
		after, err := laptop.client().Transfers(context.Background())
		if err != nil || len(after) != len(before) {
			t.Fatalf("%d copies listed after the restart, %d before (%v)", len(after), len(before), err)
		}
		for i := range after {
			if after[i].ID != before[i].ID || after[i].State != before[i].State || after[i].State == "running" || after[i].Src != before[i].Src || after[i].Progress != before[i].Progress {
				t.Errorf("copy %d after the restart: %+v, before: %+v", i, after[i], before[i])
			}
		}
	})
}

func mustCLI(t testing.TB, h *host, args ...string) string {
	t.Helper()
	out, errOut, code := h.cli(args...)
	if code != 0 {
		t.Fatalf("%s: labpool %v: exit %d: %s%s", h.name, args, code, out, errOut)
	}
	return out
}

// makeTree writes a tree with the awkward cases: spaces, Unicode, an empty
// file, a sparse one, an executable, nested directories.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	mt := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	files := map[string][]byte{
		"readme.txt":                []byte("hello\n"),
		"with space/ünïcödé ☃.dat":  randData(3<<20 + 17),
		"deep/a/b/c/empty":          nil,
		"run.sh":                    []byte("#!/bin/sh\necho hi\n"),
		"weird name (1) & [x].json": []byte("{}"),
		// Legal on Linux, only Windows forbids them: they copy.
		`deep/a/back\slash & c:olon`: []byte("odd"),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mt, mt)
	}
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	sp := filepath.Join(dir, "sparse.img")
	f, _ := os.Create(sp)
	f.WriteAt([]byte("tail"), 64<<20)
	f.Close()
	os.Chtimes(sp, mt, mt)
}

func randData(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// sameFiles compares two trees: names, contents, modes and times of files.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		ia, _ := os.Lstat(p)
		ib, err := os.Lstat(filepath.Join(b, rel))
		if err != nil {
			t.Errorf("%s missing at the destination", rel)
			return nil
		}
		da, _ := os.ReadFile(p)
		db, _ := os.ReadFile(filepath.Join(b, rel))
		if !bytes.Equal(da, db) || ia.Mode() != ib.Mode() || !ia.ModTime().Equal(ib.ModTime()) {
			t.Errorf("%s differs: mode %v/%v, time %v/%v, %d/%d bytes", rel, ia.Mode(), ib.Mode(), ia.ModTime(), ib.ModTime(), len(da), len(db))
		}
		n++
		return nil
	})
	if n < 6 {
		t.Errorf("compared only %d files", n)
	}
}
