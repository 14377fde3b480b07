package history

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
)

// decodeMeans reads the same means as DecodePoint, in every layout: a 1 s
// record (exact, single), a merged tier point, and an older JSON record.
func TestDecodeMeansMatchesDecodePoint(t *testing.T) {
	at := time.Unix(1_700_000_000, 0).UTC()
	s := func(i int) agent.Sample {
		return agent.Sample{Time: at.Add(time.Duration(i) * time.Second), GPUs: []gpu.Stats{
			{Index: 0, UtilPercent: float64(10 * i), PowerW: 100 + float64(i), TempC: 50},
			{Index: 3, UtilPercent: 97, PowerW: 650.5, TempC: 80},
		}}
	}
	merged := Merge([]Point{FromSample(s(0)), FromSample(s(1)), FromSample(s(2))}, at)
	util, power := -1, -1
	for i, m := range GPUMetrics {
		switch m.Name {
		case "util_percent":
			util = i
		case "power_w":
			power = i
		}
	}
	legacy, _ := json.Marshal(s(4))
	for _, tc := range []struct {
		name, kind string
		data       []byte
	}{
		{"1s", KindSample1s, Encode(FromSample(s(1)))},
		{"merged", KindSample1m, Encode(merged)},
		{"json", KindSample1m, legacy},
	} {
		want, err := DecodePoint(tc.kind, tc.data)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		tm, n, got, err := decodeMeans(tc.kind, tc.data, &buf, nil, util, power)
		if err != nil || !tm.Equal(want.Time) || n != want.N || len(got) != len(want.GPUs) {
			t.Fatalf("%s: decodeMeans = %v, %d, %+v, %v; want %v, %d, %d GPUs", tc.name, tm, n, got, err, want.Time, want.N, len(want.GPUs))
		}
		for i, g := range want.GPUs {
			w := GPUMeans{Index: g.Index, N: g.N, Mean: [2]float64{g.M[util].Mean, g.M[power].Mean}, Lo: g.M[util].Min, Hi: g.M[util].Max}
			if got[i] != w {
				t.Errorf("%s: GPU %d = %+v; want %+v", tc.name, i, got[i], w)
			}
		}
	}
	// A record cut short (valid base64 of fewer bytes) is refused.
	enc := Encode(merged)
	raw, _ := base64.StdEncoding.DecodeString(string(enc[1 : len(enc)-1]))
	cut := []byte(`"` + base64.StdEncoding.EncodeToString(raw[:len(raw)-3]) + `"`)
	var buf []byte
	if _, _, _, err := decodeMeans(KindSample1m, cut, &buf, nil, util, power); err == nil {
		t.Errorf("a truncated record decoded")
	}
}
