package main

import (
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

// startProfile writes a CPU profile of the first LABPOOL_CPUPROFILE_SECONDS
// (default 30) to the file LABPOOL_CPUPROFILE names, for finding what a
// long-running daemon spends its time on.
func startProfile(log *slog.Logger) {
	path := os.Getenv("LABPOOL_CPUPROFILE")
	if path == "" {
		return
	}
	secs, err := strconv.Atoi(os.Getenv("LABPOOL_CPUPROFILE_SECONDS"))
	if err != nil || secs <= 0 {
		secs = 30
	}
	f, err := os.Create(path)
	if err != nil {
		log.Error("cpu profile", "err", err)
		return
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
