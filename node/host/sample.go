package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
)

// cpuCounters are the cumulative CPU times of all CPUs, in seconds.
type cpuCounters struct {
	busy, total float64
}

// netCounters are the cumulative bytes of one interface.
type netCounters struct {
	rx, tx uint64
}

// Sample reads this machine once. It fills what it could read even when err
// is not nil; err then says what it could not read.
func (s *Sampler) Sample(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var st Stats
	errs := []error{s.readCPU(ctx, &st), s.readLoadMem(ctx, &st), s.readNet(ctx, now, &st)}
	if err := s.refreshDisks(ctx, now); err != nil {
		errs = append(errs, err)
	}
	disks, err := s.readDisks(ctx)
	st.Disks = disks
	errs = append(errs, err)
	return st, errors.Join(errs...)
}

func (s *Sampler) readCPU(ctx context.Context, st *Stats) error {
	times, err := s.src.cpuTimes(ctx)
	if err == nil && len(times) == 0 {
		err = errors.New("no cpu line")
	}
	if err != nil {
		return fmt.Errorf("read cpu times: %w", err)
	}
	cur := countCPU(times[0])
	prev := s.cpu
	s.cpu = cur
	if prev.total > 0 && cur.total > prev.total {
		st.CPUPercent = min(100, max(0, 100*(cur.busy-prev.busy)/(cur.total-prev.total)))
	}
	return nil
}

// countCPU sums t; guest time is already counted in user and nice.
func countCPU(t cpu.TimesStat) cpuCounters {
	idle := t.Idle + t.Iowait
	busy := t.User + t.Nice + t.System + t.Irq + t.Softirq + t.Steal
	return cpuCounters{busy: busy, total: busy + idle}
}

func (s *Sampler) readLoadMem(ctx context.Context, st *Stats) error {
	var errs []error
	if avg, err := s.src.load(ctx); err != nil {
		errs = append(errs, fmt.Errorf("read load average: %w", err))
	} else {
		st.Load1, st.Load5, st.Load15 = avg.Load1, avg.Load5, avg.Load15
	}
	if vm, err := s.src.memory(ctx); err != nil {
		errs = append(errs, fmt.Errorf("read memory: %w", err))
	} else {
		st.MemUsedBytes, st.MemTotalBytes = vm.Used, vm.Total
	}
	return errors.Join(errs...)
}

// readNet sets the rates since the previous Sample, over the interfaces
// present both times; a counter that went back (a reset) counts as 0.
func (s *Sampler) readNet(ctx context.Context, now time.Time, st *Stats) error {
	ifaces, err := s.src.netIO(ctx)
	if err != nil {
		return fmt.Errorf("read network counters: %w", err)
	}
	cur := make(map[string]netCounters, len(ifaces))
	for _, c := range ifaces {
		if !s.skipInterface(c.Name) {
			cur[c.Name] = netCounters{rx: c.BytesRecv, tx: c.BytesSent}
		}
	}
	prev, elapsed := s.net, now.Sub(s.netAt).Seconds()
	s.net, s.netAt = cur, now
	if prev == nil || elapsed <= 0 {
		return nil
	}
	var rx, tx uint64
	for name, c := range cur {
		p, ok := prev[name]
		if !ok {
			continue
		}
		rx += delta(p.rx, c.rx)
		tx += delta(p.tx, c.tx)
	}
	st.NetRxBps, st.NetTxBps = float64(rx)/elapsed, float64(tx)/elapsed
	return nil
}

func delta(prev, cur uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

func (s *Sampler) skipInterface(name string) bool {
	for _, p := range s.cfg.SkipInterfaces {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
