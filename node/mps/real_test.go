//go:build linux

package mps

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// client is what each share runs on a real GPU: through libcuda alone (no
// PyTorch needed), it reads the SMs and memory it is shown and allocates
// in 256 MiB steps until refused; where PyTorch is installed, it also
// times bf16 matmuls for 3 s. It holds its context HOLD_S seconds, so that
// both clients are on the GPU at once, and prints one JSON line.
const client = `
import ctypes, json, os, time
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit(json.dumps({"error": what, "code": r}))
ck(cu.cuInit(0), "cuInit")
n = ctypes.c_int(); ck(cu.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
sms = ctypes.c_int(); ck(cu.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev), "sm count")
ctx = ctypes.c_void_p(); ck(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
free = ctypes.c_size_t(); total = ctypes.c_size_t(); ck(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
got, ptrs, step = 0, [], 256 << 20
while got < (200 << 30):
    p = ctypes.c_uint64()
    if cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(step)) != 0:
        break
    ptrs.append(p); got += step
for p in ptrs:
    cu.cuMemFree_v2(p)
tflops = None
try:
    import torch
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize(); t0 = time.time(); k = 0
    while time.time() - t0 < 3:
        x @ x; k += 1
        if k % 10 == 0: torch.cuda.synchronize()
    torch.cuda.synchronize()
    tflops = round(2 * 8192**3 * k / (time.time() - t0) / 1e12, 1)
except Exception as e:
    tflops = "no torch matmul: %s" % e
time.sleep(float(os.environ.get("HOLD_S", "5")))
print(json.dumps({"devices": n.value, "sms": sms.value, "mem_free": free.value, "mem_total": total.value, "allocated": got,
    "bf16_tflops": tflops, "env": {k: v for k, v in os.environ.items() if k.startswith("CUDA_")}}))
`

// TestRealMPS starts the agent's MPS arrangement for one real GPU and runs
// two clients with 50% shares and a memory cap, each as a container would
// run (an IPC namespace and a /dev/shm of its own: the daemon's shm
// directory), and says what they saw. It runs only with LABPOOL_TEST_MPS=1
// (as root, on a machine with an NVIDIA GPU and nvidia-cuda-mps-control;
// .ci/gpucheck-mps.sh runs it); LABPOOL_TEST_MPS_GPU picks the GPU
// (index, default 0), LABPOOL_TEST_MPS_MEM_GIB the cap (default 8).
func TestRealMPS(t *testing.T) {
	if os.Getenv("LABPOOL_TEST_MPS") != "1" {
		t.Skip("LABPOOL_TEST_MPS=1 runs it on a real NVIDIA GPU")
	}
	idx := envOr("LABPOOL_TEST_MPS_GPU", "0")
	out, err := exec.Command("nvidia-smi", "--query-gpu=uuid,name,memory.total", "--format=csv,noheader", "-i", idx).Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	f := strings.Split(strings.TrimSpace(string(out)), ", ")
	gpu := f[0]
	t.Logf("GPU %s: %s", idx, strings.TrimSpace(string(out)))
	memCap := uint64(8 << 30)
	if v := os.Getenv("LABPOOL_TEST_MPS_MEM_GIB"); v != "" {
		var g uint64
		if _, err := fmtSscan(v, &g); err == nil && g > 0 {
			memCap = g << 30
		}
	}

	dir, err := os.MkdirTemp("/run", "labpool-mps-check-")
	if err != nil {
		dir = t.TempDir()
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig(dir)
	cfg.Log = testLogger(t)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := d.Acquire(ctx, gpu, "client-a", 0.5, memCap)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Acquire(ctx, gpu, "client-b", 0.5, memCap)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("daemon: static SM partitioning %v; client a %+v; client b %+v", d.gpus[gpu].static, a, b)
	script := filepath.Join(dir, "client.py")
	if err := os.WriteFile(script, []byte(client), 0o644); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	res := make([]string, 2)
	for i, c := range []Client{a, b} {
		wg.Go(func() { res[i] = runClient(t, c, script) })
	}
	time.Sleep(2 * time.Second) // both hold their contexts for HOLD_S (5 s): look at them meanwhile
	if s, err := d.control(ctx, gpu, "get_server_list"); err == nil {
		t.Logf("servers: %s", strings.TrimSpace(s))
		for _, pid := range strings.Fields(s) {
			cl, _ := d.control(ctx, gpu, "get_client_list "+pid)
			t.Logf("clients of server %s: %s", pid, strings.Fields(cl))
		}
	} else {
		t.Errorf("get_server_list: %v", err)
	}
	if smi, err := exec.Command("nvidia-smi", "-i", idx).CombinedOutput(); err == nil {
		t.Logf("nvidia-smi while both run (M+C: MPS clients):\n%s", smi)
	}
	wg.Wait()

	total := 0
	if v, err := exec.Command("nvidia-smi", "--query-gpu=multiprocessor_count", "--format=csv,noheader", "-i", idx).Output(); err == nil {
		fmtSscan(strings.TrimSpace(string(v)), &total)
	}
	for i, r := range res {
		var got struct {
			Devices   int    `json:"devices"`
			SMs       int    `json:"sms"`
			Allocated uint64 `json:"allocated"`
			Error     string `json:"error"`
		}
		t.Logf("client %c saw: %s", 'a'+i, r)
		if err := json.Unmarshal([]byte(r), &got); err != nil || got.Error != "" {
			t.Errorf("client %c: %s", 'a'+i, r)
			continue
		}
		if got.Allocated > memCap {
			t.Errorf("client %c allocated %d MiB past its %d MiB cap", 'a'+i, got.Allocated>>20, memCap>>20)
		}
		if total > 0 && got.SMs > (total+1)/2+2 {
			t.Errorf("client %c was shown %d of %d SMs with a 50%% share", 'a'+i, got.SMs, total)
		}
	}
	for _, h := range []string{"client-a", "client-b"} {
		if err := d.Release(ctx, gpu, h); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(time.Second)
	if d.alive(gpu) {
		t.Error("the daemon runs on after its last share left")
	}
}

// runClient runs the client script with c's environment, as its container
// would: an IPC namespace of its own and the daemon's shm directory as its
// /dev/shm. It returns the client's last line.
func runClient(t *testing.T, c Client, script string) string {
	cmd := exec.Command("unshare", "--ipc", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$0" /dev/shm && exec python3 "$1"`, c.ShmDir, script)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CUDA_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, c.Env()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Logf("client: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
