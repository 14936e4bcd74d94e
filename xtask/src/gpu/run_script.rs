//! The bundle's `run.sh`.

/// The bundle's `run.sh`: device first, then every test binary (each one's
/// result recorded, a failure does not stop the rest), then gpu-bench; with
/// `--benches` also the criterion targets with short timings.
pub(super) fn run_script() -> String {
    r#"#!/usr/bin/env bash
# Built by `cargo xtask gpu-bundle`. Run from the repository root:
#   gpu-bundle/run.sh            tests + gpu-bench
#   gpu-bundle/run.sh --benches  ... + criterion benches (short timings) + bench-quick
# Logs go to gpu-bundle/results/ (or $OUT/results when $OUT is set).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
results="${OUT:-$here}/results"
mkdir -p "$results"
echo "== device"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv | tee "$results/device.csv"
  nvidia-smi | tee "$results/nvidia-smi.txt"
else
  echo "nvidia-smi not found: no NVIDIA driver on this machine" | tee "$results/device.csv"
fi
failed=0
echo "== tests"
for t in "$here"/tests/*; do
  name="$(basename "$t")"
  if "$t" --test-threads=4 >"$results/$name.log" 2>&1; then
    echo "ok     $name ($(grep -c '^test .* ok$' "$results/$name.log") passed)"
  else
    echo "FAILED $name (see results/$name.log)"; tail -n 30 "$results/$name.log"; failed=$((failed + 1))
  fi
done
echo "== gpu-bench"
"$here/bin/gpu-bench" 2>&1 | tee "$results/gpu-bench.txt" || failed=$((failed + 1))
if [ "${1:-}" = "--benches" ]; then
  echo "== bench-quick"
  "$here/bin/bench-quick" 2>&1 | tee "$results/bench-quick.txt" || failed=$((failed + 1))
  echo "== criterion benches"
  for b in "$here"/benches/*; do
    "$b" --bench --warm-up-time 0.5 --measurement-time 1 2>&1 | tee "$results/$(basename "$b").txt" || failed=$((failed + 1))
  done
fi
echo "== done: $failed failed step(s)"
exit $((failed > 0))
"#
    .to_string()
}
