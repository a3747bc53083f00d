#!/usr/bin/env bash
# compare-runs.sh: do two builds of the trainer compute the same runs?
#
#   scripts/compare-runs.sh OLD_TRAINER NEW_TRAINER [CONFIG ...]
#
# Each binary trains every shipped config (or those named) for 3 steps,
# then resumes the run to step 5, with a short warm start and a small
# validation set so that the whole comparison takes minutes. The served
# config (sokoban-vllm) trains a tiny random Hugging Face model against
# the same binary's `trainer serve`. The two runs of a config must agree
# in every metrics.jsonl field but the timings, in the run's identity,
# and in every file of the final checkpoint (the trainer state's wall
# times aside). Build the binaries with `go build -o BIN ./trainer`, the
# old one from a worktree of the old commit.
#
# Exit status: 0 when every config agrees, 1 otherwise.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$(realpath "$1"); new=$(realpath "$2"); shift 2
cd "$(dirname "$0")/.."
configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then
  configs=(configs/*.yaml)
fi
work=${COMPARE_WORK:-$(mktemp -d /tmp/compare-runs.XXXXXX)}
mkdir -p "$work"
echo "work directory: $work"
go run ./scripts/tinyhf -out "$work/tinyhf" >/dev/null

short=(-set run.steps=3 -set checkpoint.every=2 -set validation.every=2 -set validation.levels=16
  -set collapse.every=2 -set run.transcripts_every=1 -set warm_start.steps=100 -set warm_start.episodes=200)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run BIN NAME CONFIG: trains the config into $work/NAME/<bin tag>.
run() {
  local bin=$1 tag=$2 cfg=$3 name
  name=$(basename "$cfg" .yaml)
  local out="$work/$name/$tag" extra=() server=""
  rm -rf "$out"; mkdir -p "$out"
  if grep -q '^ *url:' <(sed -n '/^server:/,/^[a-z]/p' "$cfg"); then
    local port; port=$(free_port)
    mkdir -p "$out/adapters"
    "$bin" serve -checkpoint "$work/tinyhf" -lora-dir "$out/adapters" -addr "127.0.0.1:$port" -tinker=false \
      >"$out/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
    # The untrained model scores every sample alike: keep zero-spread
    # groups so that the adapters are trained and pushed every step.
    extra=(-set "model.init=$work/tinyhf" -set "server.url=http://127.0.0.1:$port" -set model.max_seq=2048
      -set "server.adapter_dir=$out/adapters" -set filter.value=1 -set filter.include_zero=true)
  fi
  local status=0
  "$bin" train -config "$cfg" -out "$out/run" "${short[@]}" "${extra[@]}" -set "warm_start.cache_dir=$work/cache-$tag" \
    >"$out/train1.log" 2>&1 || status=$?
  if [ $status -eq 0 ] || { [ $status -eq 1 ] && grep -q "stopped early" "$out/train1.log"; }; then
    "$bin" train -config "$cfg" -out "$out/run" "${short[@]}" "${extra[@]}" -set "warm_start.cache_dir=$work/cache-$tag" \
      -set run.steps=5 >"$out/train2.log" 2>&1 || status=$?
  fi
  if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
  echo "$status" >"$out/status"
}

failed=0
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .yaml)
  start=$(date +%s)
  run "$old" old "$cfg"
  run "$new" new "$cfg"
  if python3 - "$work/$name/old" "$work/$name/new" <<'EOF'
import hashlib, json, os, re, sys
a, b = sys.argv[1], sys.argv[2]
def status(d): return open(os.path.join(d, "status")).read().strip()
if status(a) != status(b):
    sys.exit(f"exit status {status(a)} (old) vs {status(b)} (new); see {a}/train*.log, {b}/train*.log")
if status(a) != "0" and not os.path.exists(os.path.join(a, "run", "metrics.jsonl")):
    sys.exit(f"both runs failed (exit {status(a)}); see {a}/train*.log")
def rows(d):
    out = []
    for line in open(os.path.join(d, "run", "metrics.jsonl")):
        r = json.loads(line)
        out.append({k: v for k, v in r.items() if not k.startswith("timing_s/") and k not in ("time", "wall_time_s")})
    return out
ra, rb = rows(a), rows(b)
if len(ra) != len(rb):
    sys.exit(f"{len(ra)} metrics rows (old) vs {len(rb)} (new)")
for x, y in zip(ra, rb):
    keys = sorted(set(x) | set(y))
    diff = [k for k in keys if x.get(k, "missing") != y.get(k, "missing") and not (x.get(k) != x.get(k) and y.get(k) != y.get(k))]
    if diff:
        k = diff[0]
        sys.exit(f"step {x.get('step')}: {len(diff)} fields differ, first {k}: {x.get(k, 'missing')} (old) vs {y.get(k, 'missing')} (new)")
def files(d):
    root = os.path.join(d, "run", "checkpoints", "latest")
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, root)
            data = open(p, "rb").read()
            if f == "trainer_state.json":
                s = json.loads(data)
                for k in ("elapsed_s", "warm_start_s"):
                    s.pop(k, None)
                data = json.dumps(s, sort_keys=True).encode()
            if f == "base.json" or f == "adapter_config.json":
                # absolute paths of the run's own directories
                data = data.replace(d.encode(), b"RUN")
            if f == "tinker.json":
                # the server names models at random
                data = re.sub(rb"model_[0-9a-f]+", b"model_ID", data)
            out[rel] = hashlib.sha256(data).hexdigest()
    return out
fa, fb = files(a), files(b)
if fa != fb:
    only = sorted(set(fa) ^ set(fb))
    diff = sorted(k for k in set(fa) & set(fb) if fa[k] != fb[k])
    sys.exit(f"checkpoints differ: only in one {only}, different {diff}")
ia = json.load(open(os.path.join(a, "run", "run.json")))
ib = json.load(open(os.path.join(b, "run", "run.json")))
if ia != ib:
    sys.exit("run.json (the run identity) differs")
print(f"{len(ra)} metrics rows, {len(fa)} checkpoint files, exit status {status(a)}")
EOF
  then echo "same       $name ($(( $(date +%s) - start )) s)"
  else echo "DIFFERENT  $name"; failed=1
  fi
done
exit $failed
