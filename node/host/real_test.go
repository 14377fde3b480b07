package host

import (
	"runtime"
	"testing"
	"time"
)

// TestRealHost samples this machine twice.
func TestRealHost(t *testing.T) {
	s := NewSampler(DefaultConfig())
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	t.Logf("info: %+v", info)
	if info.Hostname == "" || info.Kernel == "" || info.Cores != runtime.NumCPU() || info.MemTotalBytes == 0 {
		t.Errorf("Info() = %+v", info)
	}
	if _, err := s.Sample(t.Context()); err != nil {
		t.Fatalf("first Sample: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	st, err := s.Sample(t.Context())
	if err != nil {
		t.Fatalf("second Sample: %v", err)
	}
	t.Logf("stats: %+v", st)
	if st.CPUPercent < 0 || st.CPUPercent > 100 || st.MemTotalBytes != info.MemTotalBytes ||
		st.MemUsedBytes == 0 || st.MemUsedBytes > st.MemTotalBytes || st.NetRxBps < 0 {
		t.Errorf("Sample() = %+v", st)
	}
	if runtime.GOOS == "linux" && len(st.Disks) == 0 {
		t.Errorf("Sample() found no local disk")
	}
	for _, d := range st.Disks {
		if d.TotalBytes == 0 || d.UsedBytes > d.TotalBytes {
			t.Errorf("disk %+v", d)
		}
	}
}
