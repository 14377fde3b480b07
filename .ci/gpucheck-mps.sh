#!/bin/bash
# gpucheck-mps.sh: labpool's GPU shares on a real NVIDIA GPU. It starts the
# agent's MPS arrangement for one GPU (node/mps: a control daemon on that GPU
# alone, its pipe, log and shm directories, the daemon in a mount namespace
# whose /dev/shm is the shm directory) and runs two clients with 50% shares
# and a memory cap, each as a job's container would run (an IPC namespace of
# its own, the shm directory as its /dev/shm, the share's CUDA_MPS_
# variables), then prints what each saw: SMs shown, memory it could
# allocate against its cap, bf16 TFLOP/s where PyTorch is installed, the
# daemon's servers and clients, nvidia-smi while both run; and checks that
# the daemon quits when the last share leaves.
#
# Prepare a folder DIR with this script and the test binary of node/mps
# (go test -c -o DIR/mps.test ./node/mps); run as root on the GPU machine:
#   bash DIR/gpucheck-mps.sh
# Run from a checkout with Go installed, it builds mps.test itself.
# GPU=N picks the GPU (default 0), MEM_GIB the cap (default 8).
# Results: $OUT/log.txt (OUT defaults to /tmp/gpucheck-mps-out).
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpucheck-mps-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1

if [[ ! -x $D/mps.test ]]; then
	if command -v go >/dev/null && [[ -f $D/../node/mps/mps.go ]]; then
		(cd "$D/.." && go test -c -o "$D/mps.test" ./node/mps) || { echo "FAIL: build mps.test"; exit 1; }
	else
		echo "FAIL: no $D/mps.test (go test -c -o DIR/mps.test ./node/mps)"; exit 1
	fi
fi

echo "== machine"
uname -r; id -u
nvidia-smi -L || { echo "FAIL: no nvidia-smi"; exit 1; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_mode,mig.mode.current,memory.total,multiprocessor_count --format=csv
for t in nvidia-cuda-mps-control nvidia-cuda-mps-server unshare python3; do printf '%s=%s ' "$t" "$(command -v $t || echo -)"; done; echo
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>/dev/null || echo "torch: none (no TFLOP/s figure)"
[[ $(id -u) == 0 ]] || { echo "FAIL: run as root (each MPS daemon gets a mount namespace of its own)"; exit 1; }
command -v nvidia-cuda-mps-control >/dev/null || { echo "FAIL: no nvidia-cuda-mps-control: shares here would be time-sliced"; exit 1; }
if pgrep -x nvidia-cuda-mps-control >/dev/null; then
	echo "note: an MPS control daemon already runs here (pids $(pgrep -x nvidia-cuda-mps-control | tr '\n' ' ')); the check starts its own, on its own pipe directory"
fi

echo "== TestRealMPS on GPU ${GPU:-0}, two 50% shares capped at ${MEM_GIB:-8} GiB"
LABPOOL_TEST_MPS=1 LABPOOL_TEST_MPS_GPU=${GPU:-0} LABPOOL_TEST_MPS_MEM_GIB=${MEM_GIB:-8} \
	"$D/mps.test" -test.run '^TestRealMPS$' -test.v -test.count=1 -test.timeout 5m
rc=$?
echo "== after: MPS daemons left running: $(pgrep -x nvidia-cuda-mps-control | tr '\n' ' ')"
[[ $rc == 0 ]] && echo "PASS" || echo "FAIL (rc $rc)"
exit $rc
