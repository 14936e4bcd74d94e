//! Free disk space, so that the heaviest steps (CubeCL's build needs
//! several GiB) skip with a reason instead of failing half-way with
//! "No space left on device" and leaving a machine's disk full for the
//! steps after them. Read with POSIX `df -Pk`; `None` where `df` is absent
//! or prints something else, and then nothing is refused.

use std::path::Path;
use std::process::Command;

/// Bytes free to an unprivileged writer on the file system holding `path`
/// (or its nearest existing parent).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let out = Command::new("df").arg("-Pk").arg(existing).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df_available_kib(&String::from_utf8_lossy(&out.stdout)).map(|kib| kib * 1024)
}

/// The "Available" column (KiB) of `df -Pk`'s one data line.
fn parse_df_available_kib(out: &str) -> Option<u64> {
    let line = out.lines().nth(1)?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Why a build of `what` would not fit on the disk under `target`, if it
/// would not: it needs `cold` bytes, or `warm` once `built` exists.
pub fn short_of(
    target: &Path,
    built: &Path,
    what: &str,
    (cold, warm): (u64, u64),
) -> Option<String> {
    let free = free_bytes(target)?;
    let is_warm = built.exists();
    let need = if is_warm { warm } else { cold };
    (free < need).then(|| {
        format!(
            "{} free under {}, and {what}'s build needs about {} ({}); free some disk",
            gib(free),
            target.display(),
            gib(need),
            if is_warm { "warm" } else { "cold" },
        )
    })
}

/// `bytes` in GiB with one decimal, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_available_column_of_posix_df_is_read_in_kib() {
        let out = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                   /dev/vda         263174212  88719312   6656780      93% /\n";
        assert_eq!(parse_df_available_kib(out), Some(6_656_780));
    }

    #[test]
    fn output_without_a_data_line_reads_as_unknown() {
        assert_eq!(parse_df_available_kib("Filesystem 1024-blocks\n"), None);
        assert_eq!(parse_df_available_kib(""), None);
    }

    #[test]
    fn the_root_of_this_machine_has_a_readable_free_figure() {
        // `df` is part of every Linux base system CI runs on.
        if Command::new("df").arg("--version").output().is_err() {
            eprintln!("skipping: no df on this machine");
            return;
        }
        assert!(free_bytes(Path::new("/")).is_some());
    }
}
