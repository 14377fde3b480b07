package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

// startPprof serves profiles of the running process on LABPOOL_PPROF, a
// loopback address such as 127.0.0.1:6060 (any other is refused), for
// finding what a long-running daemon spends its CPU and memory on:
//
//	go tool pprof http://127.0.0.1:6060/debug/pprof/heap
//	go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=30
//
// Also /debug/pprof/trace?seconds=5 (an execution trace: every wake-up of
// an idle daemon, for `go tool trace`) and /debug/pprof/NAME for goroutine,
// allocs, block, mutex, threadcreate.
// It is a debugging aid, off unless the variable is set; it serves until
// the process exits.
func startPprof(log *slog.Logger) {
	addr := os.Getenv("LABPOOL_PPROF")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if err != nil || ip == nil || !ip.IsLoopback() {
		log.Error("LABPOOL_PPROF must be a loopback address such as 127.0.0.1:6060: no profiles served", "addr", addr)
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("serve profiles", "err", err)
		return
	}
	log.Info("serving profiles (LABPOOL_PPROF)", "addr", l.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(servePprof), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) // for the life of the process
}

// servePprof answers /debug/pprof/profile (a CPU profile of ?seconds=, 30
// by default, at most 300) and /debug/pprof/NAME (runtime/pprof's profile
// of that name).
func servePprof(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/debug/pprof/")
	if !ok || name == "" {
		http.Error(w, "ask /debug/pprof/profile or /debug/pprof/{heap,allocs,goroutine,block,mutex,threadcreate}", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if name == "trace" { // an execution trace of ?seconds= (5 by default, at most 60)
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			secs = 5
		}
		if err := trace.Start(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		select {
		case <-time.After(time.Duration(min(secs, 60)) * time.Second):
		case <-r.Context().Done():
		}
		trace.Stop()
		return
	}
	if name == "profile" {
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			secs = 30
		}
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		select {
		case <-time.After(time.Duration(min(secs, 300)) * time.Second):
		case <-r.Context().Done():
		}
		pprof.StopCPUProfile()
		return
	}
	p := pprof.Lookup(name)
	if p == nil {
		http.Error(w, fmt.Sprintf("no profile %q", name), http.StatusNotFound)
		return
	}
	p.WriteTo(w, 0)
}
