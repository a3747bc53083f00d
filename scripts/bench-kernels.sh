#!/usr/bin/env bash
# Kernel speed as ratios measured in one run, on this machine:
#
#   - the current kernels (internal/simd) against the gonum-backed kernels of
#     BASE (default 7761854, the last commit before them), built from this
#     repository's history in a temporary worktree;
#   - the OpenBLAS build (-tags netlib) of both (needs libopenblas-dev);
#   - PyTorch on the CPU (scripts/torch_train_step.py; needs python3-torch);
#   - the default Sokoban RL step, timed by the trainer itself, with both
#     kernel sets starting from the same warm-started checkpoint;
#   - with OpenBLAS, each GEMM shape of the train step against OpenBLAS's
#     sgemm on the same shape and number of cores (internal/simd
#     BenchmarkGemm -tags netlib, the best SIMD level of this CPU).
#
# The Go benchmarks run ROUNDS times, alternating the two trees, and the
# table reports medians. Usage:
#
#   scripts/bench-kernels.sh                  # everything (about 10 minutes)
#   SKIP_RL=1 SKIP_NETLIB=1 scripts/bench-kernels.sh
#
# Environment: BASE, ROUNDS (3), BENCHTIME (10x), RL_STEPS (8), SKIP_GO,
# SKIP_RL, SKIP_NETLIB, SKIP_TORCH, SKIP_SHAPES, PYTHON (/usr/bin/python3),
# OPENBLAS_CORETYPE (default: OpenBLAS's own choice, unless that is its
# generic fallback; see below).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${BASE:-7761854}
ROUNDS=${ROUNDS:-3}
BENCHTIME=${BENCHTIME:-10x}
RL_STEPS=${RL_STEPS:-8}
PYTHON=${PYTHON:-/usr/bin/python3}
BENCH='^Benchmark(TrainStep|Sample|Score)$'

work=$(mktemp -d)
base="$work/base"
trap 'git worktree remove --force "$base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$base" "$BASE" >/dev/null 2>&1
: >"$work/results"

# The library list is read whole before it is searched: with pipefail,
# grep -q leaving early would fail the pipe (ldconfig killed by SIGPIPE)
# and skip the OpenBLAS builds at random.
netlib=1
libs=$(ldconfig -p 2>/dev/null || true)
if [ -n "${SKIP_NETLIB:-}" ]; then
  netlib=0
elif ! grep -q libopenblas <<<"$libs"; then
  netlib=0
  echo "== OpenBLAS not found (apt-get install libopenblas-dev): its columns are left out"
fi
export OPENBLAS_NUM_THREADS=1

# Debian's OpenBLAS (0.3.21) does not know every CPU; on one it does not
# know it falls back to its generic "Prescott" (SSE3) kernels, which made
# it 3-9x slower than its own AVX-512 kernels on an Emerald Rapids VM.
# Then the comparison would be with the wrong library, so pick the newest
# kernels the CPU runs (PyTorch loads the same library and gets the same
# choice). OPENBLAS_CORETYPE set by the caller is kept.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && command -v "$PYTHON" >/dev/null 2>&1; then
  core=$(OPENBLAS_VERBOSE=2 "$PYTHON" -c 'import ctypes; ctypes.CDLL("libopenblas.so.0")' 2>&1 | sed -n 's/^Core: //p' | sed -n 1p)
  cpuflags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  if [ "$core" = Prescott ]; then
    case " $cpuflags " in
      *" avx512_bf16 "*) export OPENBLAS_CORETYPE=Cooperlake ;;
      *" avx512f "*) export OPENBLAS_CORETYPE=SkylakeX ;;
      *" avx2 "*) export OPENBLAS_CORETYPE=Haswell ;;
    esac
  fi
  if [ -n "$core" ]; then
    echo "== OpenBLAS kernels: ${OPENBLAS_CORETYPE:-$core}${OPENBLAS_CORETYPE:+ (set by OPENBLAS_CORETYPE; OpenBLAS chose $core for this CPU)}"
  fi
fi

# bench DIR LABEL [TAGS]: appends "LABEL metric value" lines to $work/results.
bench() {
  local dir=$1 label=$2 tags=${3:-}
  local flags=()
  if [ -n "$tags" ]; then
    flags=(-tags "$tags")
    export CGO_LDFLAGS=-lopenblas
  fi
  (cd "$dir" && go test "${flags[@]}" -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" ./model/native) |
    awk -v l="$label" '
      /^BenchmarkTrainStep/ { for (i = 1; i <= NF; i++) if ($i == "ms/step") print l, "train-ms/step", $(i-1) }
      /^BenchmarkSample\/batch1-/ { for (i = 1; i <= NF; i++) if ($i == "tok/s") print l, "sample1-tok/s", $(i-1) }
      /^BenchmarkSample\/batch64-/ { for (i = 1; i <= NF; i++) if ($i == "tok/s") print l, "sample64-tok/s", $(i-1) }
      /^BenchmarkScore/ { for (i = 1; i <= NF; i++) if ($i == "scored-tok/s") print l, "score-tok/s", $(i-1) }
      /^BenchmarkTrainStep/ { for (i = 1; i <= NF; i++) if ($i == "step-%peak") print l, "train-%peak", $(i-1) }
      /^BenchmarkTrainStep/ { for (i = 1; i <= NF; i++) if ($i == "med-ms/step") print l, "train-med-ms", $(i-1) }
      /^BenchmarkTrainStep/ { for (i = 1; i <= NF; i++) if ($i == "med-step-%peak") print l, "train-med-%peak", $(i-1) }
      /^BenchmarkTrainStep-/ { for (i = 1; i <= NF; i++) if ($i == "gemm-in-step-%peak") print l, "gemm-in-step-%pk", $(i-1) }
      /^BenchmarkTrainStep-/ { for (i = 1; i <= NF; i++) if ($i == "gemm-core-%") print l, "gemm-core-%", $(i-1) }
    ' >>"$work/results"
  unset CGO_LDFLAGS
}

[ -n "${SKIP_GO:-}" ] && ROUNDS=0
echo "== Go benchmarks: $ROUNDS rounds, $BENCHTIME each (base $BASE)"
for r in $(seq "$ROUNDS"); do
  echo "   round $r"
  bench "$base" base
  bench . simd
  if [ "$netlib" = 1 ]; then
    bench "$base" base-openblas netlib
    bench . simd-openblas netlib
  fi
done

if [ -z "${SKIP_TORCH:-}" ] && "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "== PyTorch"
  "$PYTHON" scripts/torch_train_step.py --steps 20 |
    awk '{ split($3, a, "="); print "torch", "train-ms/step", a[2] }' >>"$work/results"
fi

if [ -z "${SKIP_RL:-}" ]; then
  echo "== default Sokoban RL step ($RL_STEPS steps, validation off, same warm-started start)"
  go run ./trainer -config configs/sokoban.yaml -out "$work/warm" -set run.steps=0 >/dev/null 2>&1
  init="$work/warm/checkpoints/latest"
  rl() {
    local dir=$1 label=$2
    (cd "$dir" && go run ./trainer -config configs/sokoban.yaml -out "$work/rl-$label" \
      -set "model.init=$init" -set run.steps="$RL_STEPS" -set validation.every=0 \
      -set checkpoint.every=0 >/dev/null 2>&1)
    awk -v l="$label" '/"timing_s\/step"/ { match($0, /"timing_s\/step":[0-9.e+-]+/); v = substr($0, RSTART + 16, RLENGTH - 16); s += v; n++ }
      END { if (n) print l, "rl-s/step", s / n }' "$work/rl-$label/metrics.jsonl" >>"$work/results"
  }
  rl "$base" base
  rl . simd
fi

if [ "$netlib" = 1 ] && [ -z "${SKIP_SHAPES:-}" ]; then
  echo "== GEMM per shape against OpenBLAS"
  CGO_LDFLAGS=-lopenblas go test -tags netlib -run '^$' -bench 'Gemm/(fwdNT|bwdNN|dwTN)/' ./internal/simd |
    awk '
      /^BenchmarkGemm\// {
        split($1, f, "/"); lvl = f[4]; key = f[2] "/" f[3] " " substr(f[5], 1, 2)
        for (i = 1; i <= NF; i++) { if ($i == "%peak") p = $(i-1); if ($i == "med-%peak") md = $(i-1); if ($i == "openblas-%peak") o = $(i-1); if ($i == "x-openblas") x = $(i-1) }
        rank = (lvl == "avx512") ? 2 : (lvl == "avx2") ? 1 : 0
        if (!(key in best) || rank > best[key]) { best[key] = rank; row[key] = sprintf("%-24s %-3s %-7s %7.1f %9.1f %12.1f %10.2fx", f[2] "/" f[3], substr(f[5], 1, 2), lvl, p, md, o, x) }
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
      }
      END {
        printf "%-24s %-3s %-7s %7s %9s %12s %11s\n", "shape", "w", "level", "%peak", "med-%peak", "openblas-%pk", "x-openblas"
        for (i = 1; i <= n; i++) print row[order[i]]
      }' >"$work/shapes"
fi

echo
awk '
  { v[$1 " " $2] = v[$1 " " $2] " " $3; keys[$2] = 1; labels[$1] = 1 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    norder = split("train-ms/step train-%peak train-med-ms train-med-%peak gemm-in-step-%pk gemm-core-% sample1-tok/s sample64-tok/s score-tok/s rl-s/step", order, " ")
    split("base simd base-openblas simd-openblas torch", cols, " ")
    printf "%-16s", "metric"; for (c = 1; c <= 5; c++) if (cols[c] in labels) printf " %14s", cols[c]; printf " %12s\n", "simd/base"
    for (o = 1; o <= norder; o++) {
      k = order[o]; if (!(k in keys)) continue
      printf "%-16s", k
      for (c = 1; c <= 5; c++) if (cols[c] in labels) {
        s = v[cols[c] " " k]; if (s == "") { printf " %14s", "-"; continue }
        m[c] = median(s); printf " %14.4g", m[c]
      }
      b = v["base " k]; n = v["simd " k]
      if (b != "" && n != "") {
        r = median(n) / median(b); if (k ~ /ms|s\/step/) r = 1 / r
        printf " %11.2fx", r
      }
      printf "\n"
      delete m
    }
    print "(simd/base: speed-up of the current kernels; ms and s/step are inverted so that >1 is faster)"
  }' "$work/results"
if [ -s "$work/shapes" ]; then
  echo
  cat "$work/shapes"
  echo "(%peak: share of this machine's measured FMA peak on w cores over all calls; med-%peak: at the median call;"
  echo " openblas-%pk at its median call, x-openblas median against median; OpenBLAS single-threaded per core, w=2 splits the rows of C in two)"
fi
