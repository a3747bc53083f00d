#!/usr/bin/env bash
# bench-async.sh: steps per hour of the served loop, sampling in line
# (rollout.staleness 0) against sampling ahead (1 and 2).
#
#   scripts/bench-async.sh [STEPS] [ROUNDS]
#
# The policy is a random Hugging Face model (d_model 256, 4 layers, written
# by scripts/tinyhf) served by `trainer serve` in its own process, pinned to
# CPU 1 with GOMAXPROCS=1; the trainer (the learner, LoRA rank 16) is pinned
# to CPU 0 with GOMAXPROCS=1: sampling and learning get a core each. Each
# round trains configs/sokoban-vllm.yaml, cut down so that a step takes
# seconds on one core (4 levels x 4 samples, 2 turns, replies of at most
# 48 tokens), for STEPS steps (default 12) at each staleness, in turn; the
# table gives each staleness's median steps per hour and its ratio to the
# in-line loop's. Extra -set flags for every run can be given in
# BENCH_SETS (e.g. BENCH_SETS="-set run.group_size=8 -set filter.strategy=top_k
# -set filter.value=0.25" makes sampling a larger share of the step). The model is untrained, so
# every group is kept (filter.value 1, include_zero): the learner does a
# full update every step, as it would on a model that learns. Needs
# taskset (util-linux) and at least 2 CPUs.
set -euo pipefail
steps=${1:-12}
rounds=${2:-3}
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/bench-async.XXXXXX)
echo "work directory: $work"
go build -o "$work/trainer" ./trainer
go run ./scripts/tinyhf -out "$work/model" -d-model 256 -d-ff 768 -layers 4 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

run() { # run STALENESS ROUND: prints the steps' wall time in seconds (start-up left out)
  local k=$1 r=$2 out="$work/k$1-r$2"
  mkdir -p "$out/adapters"
  GOMAXPROCS=1 taskset -c 1 "$work/trainer" serve -checkpoint "$work/model" -lora-dir "$out/adapters" \
    -addr "127.0.0.1:$port" -tinker=false >"$out/serve.log" 2>&1 &
  local server=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  GOMAXPROCS=1 taskset -c 0 "$work/trainer" train -config configs/sokoban-vllm.yaml -out "$out/run" \
    -set "model.init=$work/model" -set "server.url=http://127.0.0.1:$port" -set "server.adapter_dir=$out/adapters" \
    -set run.steps="$steps" -set rollout.staleness="$k" -set filter.value=1 -set filter.include_zero=true \
    -set run.groups=4 -set run.group_size=4 -set rollout.max_turns=2 -set rollout.sampling.max_tokens=48 ${BENCH_SETS:-} \
    -set validation.every=0 -set collapse.every=0 -set checkpoint.every=0 -set run.transcripts_every=0 \
    >"$out/train.log" 2>&1 || { echo "k=$k round $r failed: $out/train.log" >&2; kill $server; exit 1; }
  kill $server; wait $server 2>/dev/null || true
  python3 -c "import json,sys; print(sum(json.loads(l).get('timing_s/step', 0) for l in open(sys.argv[1])))" "$out/run/metrics.jsonl"
}

declare -A times
for r in $(seq "$rounds"); do
  for k in 0 1 2; do
    t=$(run "$k" "$r")
    times[$k]="${times[$k]:-} $t"
    echo "round $r, staleness $k: $t s for $steps steps"
  done
done
python3 - "$steps" "${times[0]}" "${times[1]}" "${times[2]}" <<'EOF'
import statistics, sys
steps = int(sys.argv[1])
med = [statistics.median(float(x) for x in a.split()) for a in sys.argv[2:]]
print(f"\n| rollout.staleness | median wall time, {steps} steps | steps per hour | ratio to 0 |")
print("|---|---|---|---|")
for k, t in enumerate(med):
    print(f"| {k} | {t:.1f} s | {3600 * steps / t:.0f} | {med[0] / t:.2f}× |")
EOF
