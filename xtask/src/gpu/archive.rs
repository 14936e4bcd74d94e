//! Packing the bundle into one compressed archive that travels.
//!
//! At most 64 MiB goes to a GPU machine; the unpacked bundle (every
//! release test binary of the workspace, the bench binaries, gpu-bench)
//! is far larger, and executables compress about tenfold. The archive is
//! `tar` + `xz` (both on any fresh Linux image; when `xz` is missing on
//! the GPU machine, `run.sh` unpacks with Python's `tarfile`), and the
//! build fails if it is over [`LIMIT`], so a bundle that cannot travel is
//! never written.

use std::fs;
use std::path::Path;
use std::process::Command;

/// The largest archive written: 60 MiB, under the 64 MiB a GPU machine
/// receives with room for the repository's own files.
pub(super) const LIMIT: u64 = 60 << 20;

/// The archive's name inside the bundle folder.
pub(super) const ARCHIVE: &str = "bundle.tar.xz";

/// Pack folder `name` of `parent` into `archive` (`tar` with `xz -LEVEL`,
/// all cores) and return its size; refused past [`LIMIT`].
pub(super) fn pack(parent: &Path, name: &str, archive: &Path, level: u8) -> Result<u64, String> {
    let mut cmd = Command::new("tar");
    cmd.env("XZ_OPT", format!("-{level} -T0"))
        .arg("-C")
        .arg(parent)
        .arg("-cJf")
        .arg(archive)
        .arg(name);
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("could not start tar (is it installed?): {e}"))?;
    if !status.success() {
        return Err(format!("{cmd:?} failed with {status} (is xz installed?)"));
    }
    let bytes = fs::metadata(archive)
        .map_err(|e| format!("reading {}: {e}", archive.display()))?
        .len();
    if bytes > LIMIT {
        return Err(format!(
            "{} is {:.1} MiB, over the {} MiB a GPU machine can receive; \
             leave crates out with --exclude",
            archive.display(),
            bytes as f64 / (1 << 20) as f64,
            LIMIT >> 20
        ));
    }
    Ok(bytes)
}

/// The `run.sh` beside the archive: unpack into a temporary folder (or
/// `$GPU_BUNDLE_DIR`), then run the bundle's own `run.sh` from the
/// current directory (the repository root) with the same arguments;
/// results go to `gpu-bundle/results/` (or `$OUT/results`).
pub(super) fn unpack_script() -> String {
    format!(
        r#"#!/usr/bin/env bash
# Built by `cargo xtask gpu-bundle`. Run from the repository root:
#   gpu-bundle/run.sh             tests + gpu-bench
#   gpu-bundle/run.sh --benches   ... + criterion benches + bench-quick
#   gpu-bundle/run.sh --dry-run   unpack, list every test, run nothing
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
work="${{GPU_BUNDLE_DIR:-$(mktemp -d)}}"
mkdir -p "$work"
if command -v xz >/dev/null 2>&1; then
  tar -C "$work" -xJf "$here/{ARCHIVE}"
else
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/{ARCHIVE}" "$work"
fi
export GPU_BUNDLE_RESULTS="${{OUT:-$here}}/results"
exec "$work/bundle/run.sh" "$@"
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unpack_script_names_the_archive_and_unpacks_without_xz_too() {
        let script = unpack_script();
        assert!(script.starts_with("#!/usr/bin/env bash"));
        assert!(script.contains(&format!("-xJf \"$here/{ARCHIVE}\"")));
        assert!(script.contains("tarfile.open"), "python fallback");
        assert!(script.contains("exec \"$work/bundle/run.sh\" \"$@\""));
    }

    #[test]
    fn a_folder_is_packed_into_one_archive_under_the_limit() {
        let dir = std::env::temp_dir().join(format!("xtask-archive-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("bundle")).unwrap();
        fs::write(dir.join("bundle/run.sh"), "echo hi\n").unwrap();
        let archive = dir.join(ARCHIVE);
        let bytes = pack(&dir, "bundle", &archive, 1).unwrap();
        assert!(bytes > 0 && bytes <= LIMIT);
        fs::remove_dir_all(&dir).unwrap();
    }
}
