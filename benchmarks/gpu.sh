#!/usr/bin/env bash
# One prepared run for a machine with CUDA: install the project, run the cuda-marked tests, the common
# checks with device="cuda", and the GPU rows of every benchmark that takes --device. Everything goes
# to OUTDIR/gpu_tables.md (OUTDIR: first argument, else $OUT, else ./gpu-results); every benchmark run saves its
# results file to OUTDIR/results (--quick runs as <bench>.quick.json, never published); merge the full ones here with
#   python benchmarks/render_docs.py --merge OUTDIR/results
#
#   bash benchmarks/gpu_wheels.sh          # here, where a package index is reachable (fills .whl/)
#   bash benchmarks/gpu.sh "$OUT"          # there (carry .whl)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-results}}
mkdir -p "$out"
report="$out/gpu_tables.md"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  $py -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || status=1
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
# the project itself is pure Python: an editable install when pip can build offline, else the path
$py -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>/dev/null \
  || export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

{
  echo "# GPU run, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  $py -c "import torch, sklearn, sklearn_icml; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'| scikit-learn', sklearn.__version__, '| sklearn-icml', sklearn_icml.__version__)" 2>&1
  echo '```'
} > "$report"

run() {  # run a command, log it into the report, remember failures
  echo -e "\n## \$ $*\n\n\`\`\`" >> "$report"
  "$@" 2>&1 | tee -a "$out/gpu_log.txt" | tail -n 25 >> "$report"
  local rc=${PIPESTATUS[0]}
  echo -e "\`\`\`\nexit status $rc" >> "$report"
  [ "$rc" -eq 0 ] || status=1
}

run $py -m pytest -q -p no:cacheprovider -m cuda tests
SKLEARN_ICML_TEST_DEVICE=cuda run $py -m pytest -q -p no:cacheprovider tests/test_common.py -x
# only the benchmarks with torch rows (they read args.device); peers that need a network or a second
# virtualenv are skipped there (--no-peer where a benchmark offers it)
for bench in benchmarks/bench_*.py; do
  [ -e "$bench" ] || continue
  grep -q -- "args.device" "$bench" || continue
  extra=()
  grep -q -- "--no-peer" "$bench" && extra+=(--no-peer)
  echo -e "\n## $bench --quick --device cuda ${extra[*]}\n" >> "$report"
  $py "$bench" --quick --device cuda "${extra[@]}" --output "$report" --results-dir "$out/results" > "$out/$(basename "$bench" .py).log" 2>&1 || {
    status=1; echo "FAILED, see $(basename "$bench" .py).log" >> "$report"; }
done
# S14 scheduling: n = 10,000 with B = 64, 512 and 2,048 samples per epoch, 60 s each, against CP-SAT at 60 s, 3 seeds
run $py benchmarks/bench_scheduling.py --device cuda --seeds 3 --only gpu --output "$report" --results-dir "$out/results"
# S4 DySLIM: KS at 512 points (periodic_conv, batch 1024, 12 bandwidths), L63 at time step 0.4; seconds per step CPU vs GPU
run $py benchmarks/bench_dyslim.py --device cuda --seeds 1 --cases gpu --output "$report" --results-dir "$out/results"
# S8 FreeBind: MLP projectors (InfoNCE, 10^5 pairs, 1024 -> 768, batch 4096, 7 projectors); seconds per epoch CPU vs GPU
run $py benchmarks/bench_freebind.py --device cuda --seeds 2 --only mlp_cost --output "$report" --results-dir "$out/results"
# S5 Auto-Linear: the full GPU rows (2-D 64 x 64 maps, 10k unpaired per domain, conv encoders, 3000 steps each,
# against a paired-only conv encoder-decoder; seconds per epoch CPU vs GPU)
run $py benchmarks/bench_auto_linear.py --device cuda --seeds 1 --only gpu --output "$report" --results-dir "$out/results"
# S2 LeftInvertibleWGAN: digits, networks (512, 512, 512), latent 16, 20,000 iterations; iteration time CPU vs GPU
run $py benchmarks/bench_wgan.py --device cuda --seeds 1 --only gpu --output "$report" --results-dir "$out/results"
# S18 ExpandAndCluster: a 64-32-10 digits teacher, N = 20, rho = 2: recovered widths, alignment, fit time CPU vs GPU
run $py benchmarks/bench_expand_cluster.py --device cuda --seeds 1 --digits --no-recovery --no-cost --output "$report" --results-dir "$out/results"
# S19 scaling: the paper's own shape, a ViT patch-size schedule (8 -> 4 -> 2, digits at 32x32), 3 seeds,
# 2e12 FLOPs per static patch size: realised against predicted adaptive / best static FLOPs
run $py benchmarks/bench_scaling.py --device cuda --seeds 3 --only vit --vit-budget 2e12 --output "$report" --results-dir "$out/results"
echo "gpu.sh finished with status $status; tables in $report"
exit $status
