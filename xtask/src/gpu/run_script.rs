//! The bundle's `run.sh`.

/// The bundle's own `run.sh` (inside the archive; the `run.sh` beside the
/// archive unpacks and calls it): device first, then every test binary
/// (each one's result recorded, a failure does not stop the rest), then
/// gpu-bench; with `--benches` also the criterion targets with short
/// timings; with `--dry-run` only each test binary's list of tests. Under
/// `GPU_BUNDLE_SMOKE=1` (CI, on the stand-in driver) the same steps run
/// small: `gpu-bench --smoke`, `bench-quick --smoke`, and each criterion
/// benchmark once in test mode.
pub(super) fn run_script() -> String {
    r#"#!/usr/bin/env bash
# Built by `cargo xtask gpu-bundle`, packed in its archive; the run.sh
# beside the archive unpacks it and calls this from the repository root:
#   run.sh            tests + gpu-bench
#   run.sh --benches  ... + criterion benches (short timings) + bench-quick
#   run.sh --dry-run  list every test binary's tests, run nothing
# Logs go to $GPU_BUNDLE_RESULTS (else $OUT/results, else ./results here).
# GPU_BUNDLE_SMOKE=1 runs every step small (CI, on the stand-in driver:
# its timings are not a GPU's and are quoted nowhere).
# pipefail: a step piped into tee fails when the step fails, not tee.
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="${GPU_BUNDLE_RESULTS:-${OUT:-$here}/results}"
mkdir -p "$results"
if [ -n "${GPU_BUNDLE_SMOKE:-}" ]; then
  small="--smoke"; criterion=""
else
  small=""; criterion="--bench --warm-up-time 0.5 --measurement-time 1"
fi
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
"$here/bin/gpu-bench" $small 2>&1 | tee "$results/gpu-bench.txt" || failed=$((failed + 1))
if [ "${1:-}" = "--benches" ]; then
  echo "== bench-quick"
  "$here/bin/bench-quick" $small 2>&1 | tee "$results/bench-quick.txt" || failed=$((failed + 1))
  echo "== criterion benches"
  for b in "$here"/benches/*; do
    "$b" $criterion 2>&1 | tee "$results/$(basename "$b").txt" || failed=$((failed + 1))
  done
fi
echo "== done: $failed failed step(s)"
exit $((failed > 0))
"#
    .to_string()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Command;

    fn executable(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A bundle whose one test passes and whose gpu-bench exits `code`
    /// after printing its arguments; returns (exit code, stdout).
    fn run_bundle(name: &str, code: i32, smoke: bool) -> (Option<i32>, String) {
        let dir = std::env::temp_dir().join(format!("xtask-run-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for sub in ["tests", "bin", "benches"] {
            fs::create_dir_all(dir.join(sub)).unwrap();
        }
        executable(&dir.join("run.sh"), &run_script());
        executable(
            &dir.join("tests/t"),
            "#!/bin/sh\necho 'test a ... ok'\necho 'test result: ok. 1 passed'\n",
        );
        executable(
            &dir.join("bin/gpu-bench"),
            &format!("#!/bin/sh\necho \"gpu-bench args: $*\"\nexit {code}\n"),
        );
        let mut cmd = Command::new(dir.join("run.sh"));
        cmd.env("GPU_BUNDLE_RESULTS", dir.join("results"))
            .env_remove("GPU_BUNDLE_SMOKE");
        if smoke {
            cmd.env("GPU_BUNDLE_SMOKE", "1");
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(dir.join("results/t.log").exists(), "{stdout}");
        fs::remove_dir_all(&dir).unwrap();
        (out.status.code(), stdout)
    }

    #[test]
    fn a_failing_gpu_bench_fails_the_run_though_its_output_goes_through_tee() {
        let (code, stdout) = run_bundle("fails", 3, false);
        assert_eq!(code, Some(1), "{stdout}");
        assert!(stdout.contains("== done: 1 failed step(s)"), "{stdout}");
        assert!(stdout.contains("ok     t (1 passed)"), "{stdout}");
    }

    #[test]
    fn the_smoke_run_passes_smoke_to_gpu_bench_and_a_full_run_does_not() {
        let (code, stdout) = run_bundle("smoke", 0, true);
        assert_eq!(code, Some(0), "{stdout}");
        assert!(stdout.contains("gpu-bench args: --smoke"), "{stdout}");
        let (code, stdout) = run_bundle("full", 0, false);
        assert_eq!(code, Some(0), "{stdout}");
        assert!(stdout.contains("gpu-bench args: \n"), "{stdout}");
    }
}
