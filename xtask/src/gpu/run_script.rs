//! The bundle's `run.sh`.

/// The bundle's own `run.sh` (inside the archive; the `run.sh` beside the
/// archive unpacks and calls it): device first, then every test binary
/// (each one's result recorded, a failure does not stop the rest), then
/// gpu-bench; with `--benches` also the criterion targets with short
/// timings; with `--dry-run` only each test binary's list of tests.
pub(super) fn run_script() -> String {
    r#"#!/usr/bin/env bash
# Built by `cargo xtask gpu-bundle`, packed in its archive; the run.sh
# beside the archive unpacks it and calls this from the repository root:
#   run.sh            tests + gpu-bench
#   run.sh --benches  ... + criterion benches (short timings) + bench-quick
#   run.sh --dry-run  list every test binary's tests, run nothing
# Logs go to $GPU_BUNDLE_RESULTS (else $OUT/results, else ./results here).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
results="${GPU_BUNDLE_RESULTS:-${OUT:-$here}/results}"
mkdir -p "$results"
if [ "${1:-}" = "--dry-run" ]; then
  count=0; tests=0; broken=0
  for t in "$here"/tests/* "$here"/benches/* "$here"/bin/*; do
    [ -x "$t" ] || { echo "not executable: $t"; broken=$((broken + 1)); continue; }
    count=$((count + 1))
  done
  for t in "$here"/tests/*; do
    if out="$("$t" --list 2>/dev/null)"; then
      tests=$((tests + $(printf '%s\n' "$out" | grep -c ': test$' || true)))
    else
      echo "cannot list: $(basename "$t")"; broken=$((broken + 1))
    fi
  done
  echo "dry run: $count executables, $tests tests listed, $broken broken"
  exit $((broken > 0))
fi
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
