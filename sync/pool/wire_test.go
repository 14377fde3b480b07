package pool_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/pool"
)

func TestDecodeJoinRequest(t *testing.T) {
	proof := bytes.Repeat([]byte{7}, 32)
	enc := func(r pool.JoinRequest) string { b, _ := json.Marshal(r); return string(b) }
	tests := []struct {
		name, in string
		wantErr  bool
	}{
		{"valid", enc(pool.JoinRequest{Proof: proof, Name: "lab-1 (DGX)"}), false},
		{"no name", enc(pool.JoinRequest{Proof: proof}), false},
		{"short proof", enc(pool.JoinRequest{Proof: proof[:31], Name: "x"}), true},
		{"no proof", `{"name":"x"}`, true},
		{"control character", enc(pool.JoinRequest{Proof: proof, Name: "a\x1bb"}), true},
		{"long name", enc(pool.JoinRequest{Proof: proof, Name: strings.Repeat("n", 65)}), true},
		{"bad utf-8", `{"proof":"` + strings.Repeat("A", 43) + `=","name":"` + "\xff" + `"}`, true},
		{"trailing data", enc(pool.JoinRequest{Proof: proof}) + "{}", true},
		{"oversized", `{"name":"` + strings.Repeat(" ", 5000) + `"}`, true},
		{"not json", "hello", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pool.DecodeJoinRequest(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr || err != nil && !errors.Is(err, pool.ErrBadMessage) {
				t.Errorf("DecodeJoinRequest = %v; want error %v (ErrBadMessage)", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeJoinResponse(t *testing.T) {
	c, _ := pool.NewCode()
	good := pool.JoinResponse{PoolID: c.PoolID(), Proof: []byte{1}, Name: "lab1",
		Members: []pool.Member{{ID: devA, Name: "a", Version: 1, AddedBy: devA, AddedAt: t0}}}
	b, _ := json.Marshal(good)
	got, err := pool.DecodeJoinResponse(bytes.NewReader(b))
	if err != nil || got.Members[0].ID != devA || !got.Members[0].AddedAt.Equal(t0) {
		t.Fatalf("DecodeJoinResponse = %+v, %v", got, err)
	}
	bad := []string{
		`{"pool_id":"nothex","members":[]}`,
		`{"pool_id":"` + c.PoolID() + `","members":[{"id":"not-an-id"}]}`,
		`{"pool_id":"` + c.PoolID() + `","members":[{"name":"\u0007"}]}`,
		`{"pool_id":"` + c.PoolID() + `","name":"` + strings.Repeat("x", 5<<20) + `"}`,
	}
	for _, in := range bad {
		if _, err := pool.DecodeJoinResponse(strings.NewReader(in)); !errors.Is(err, pool.ErrBadMessage) {
			t.Errorf("DecodeJoinResponse(%.60q) = %v; want ErrBadMessage", in, err)
		}
	}
}

func FuzzDecodeJoinRequest(f *testing.F) {
	b, _ := json.Marshal(pool.JoinRequest{PoolID: "0011223344556677", Proof: make([]byte, 32), Name: "x"})
	f.Add(b)
	f.Add([]byte(`{"proof":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := pool.DecodeJoinRequest(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(req.Proof) != 32 || len(req.Name) > pool.MaxNameLen {
			t.Fatalf("accepted %+v", req)
		}
		again, _ := json.Marshal(req)
		if _, err := pool.DecodeJoinRequest(bytes.NewReader(again)); err != nil {
			t.Fatalf("re-encoded request refused: %v", err)
		}
	})
}

func FuzzDecodeJoinResponse(f *testing.F) {
	b, _ := json.Marshal(pool.JoinResponse{PoolID: "0011223344556677", Proof: make([]byte, 32), Name: "x",
		Members: []pool.Member{{ID: devA, Name: "a", Version: 1, AddedBy: devB, AddedAt: t0}}})
	f.Add(b)
	f.Add([]byte(`{"pool_id":"0011223344556677","members":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		resp, err := pool.DecodeJoinResponse(bytes.NewReader(in))
		if err != nil {
			return
		}
		if _, err := pool.ParseID(resp.PoolID); err != nil {
			t.Fatalf("accepted pool id %q", resp.PoolID)
		}
		again, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := pool.DecodeJoinResponse(bytes.NewReader(again)); err != nil {
			t.Fatalf("re-encoded response refused: %v", err)
		}
	})
}
