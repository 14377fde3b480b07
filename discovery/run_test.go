package discovery

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// These fail before touching the network.

func TestRunRejectsBadConfig(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg := DefaultConfig()
	cfg.Instance, cfg.Host, cfg.Port = "lab1-K7Q2", "labpool-k7q2", 4242
	txt := TXT{ID: testID, APIVersion: 1}

	unknown := cfg
	unknown.Ifaces = []string{"no-such-if0"}
	noInstance := cfg
	noInstance.Instance = ""
	noPort := cfg
	noPort.Port = 0

	tests := []struct {
		name    string
		run     func(context.Context) error
		wantErr error
	}{
		{"announce unknown iface", NewAnnouncer(unknown, txt, log).Run, ErrUnknownInterface},
		{"announce bad txt", NewAnnouncer(cfg, TXT{ID: "x"}, log).Run, ErrInvalidTXT},
		{"announce no port", NewAnnouncer(noPort, txt, log).Run, ErrConfig},
		{"browse unknown iface", func(ctx context.Context) error {
			return NewBrowser(unknown, log).Run(ctx, func(Candidate) {})
		}, ErrUnknownInterface},
		{"browse no instance", func(ctx context.Context) error {
			return NewBrowser(noInstance, log).Run(ctx, func(Candidate) {})
		}, ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tt.run(ctx); !errors.Is(err, tt.wantErr) {
				t.Errorf("Run = %v; want %v", err, tt.wantErr)
			}
		})
	}
}

func TestSetTXT(t *testing.T) {
	a := NewAnnouncer(Config{Port: 4242}, TXT{ID: testID, APIVersion: 1}, slog.New(slog.DiscardHandler))
	if got := a.TXT().Port; got != 4242 {
		t.Errorf("TXT().Port = %d; want the config's 4242", got)
	}
	if err := a.SetTXT(TXT{ID: testID, APIVersion: 1, Pool: "bad pool"}); !errors.Is(err, ErrInvalidTXT) {
		t.Errorf("SetTXT(bad pool) = %v; want %v", err, ErrInvalidTXT)
	}
	want := TXT{ID: testID, APIVersion: 1, Port: 4242, Pool: "lab"}
	for range 3 { // more calls than the wake channel holds: none blocks
		if err := a.SetTXT(TXT{ID: testID, APIVersion: 1, Pool: "lab"}); err != nil {
			t.Fatalf("SetTXT: %v", err)
		}
	}
	if got := a.TXT(); got != want {
		t.Errorf("TXT() = %+v; want %+v", got, want)
	}
}
