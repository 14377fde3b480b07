package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// startProfile writes a CPU profile of the first LABPOOL_CPUPROFILE_SECONDS
// (default 30), from LABPOOL_CPUPROFILE_AFTER seconds after the start (default
// 0), to the file LABPOOL_CPUPROFILE names, for finding what a
// long-running daemon spends its time on. "{pid}" in the name becomes the
// process id, for several daemons on one machine. LABPOOL_CPUPROFILE_HZ
// samples more often than the default 100 Hz, for a process that is
// mostly idle (the runtime warns once that the rate was already set).
func startProfile(log *slog.Logger) {
	path := os.Getenv("LABPOOL_CPUPROFILE")
	if path == "" {
		return
	}
	path = strings.ReplaceAll(path, "{pid}", strconv.Itoa(os.Getpid()))
	secs, err := strconv.Atoi(os.Getenv("LABPOOL_CPUPROFILE_SECONDS"))
	if err != nil || secs <= 0 {
		secs = 30
	}
	after, _ := strconv.Atoi(os.Getenv("LABPOOL_CPUPROFILE_AFTER"))
	time.AfterFunc(time.Duration(after)*time.Second, func() { profile(log, path, secs) })
}

// profile writes a CPU profile of the next secs seconds to path.
func profile(log *slog.Logger, path string, secs int) {
	f, err := os.Create(path)
	if err != nil {
		log.Error("cpu profile", "err", err)
		return
	}
	if hz, err := strconv.Atoi(os.Getenv("LABPOOL_CPUPROFILE_HZ")); err == nil && hz > 0 {
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Error("cpu profile", "err", err)
		f.Close()
		return
	}
	time.AfterFunc(time.Duration(secs)*time.Second, func() {
		pprof.StopCPUProfile()
		f.Close()
		log.Info("cpu profile written", "file", path)
	})
}
