//! Whether this machine has a Vulkan driver CubeCL's wgpu runtime can use
//! (on a CPU-only machine: Mesa's lavapipe, Debian's `mesa-vulkan-drivers`).

use std::path::Path;
use std::process::Command;

/// Where Vulkan loaders look for driver manifests (ICDs) on Linux.
const ICD_DIRS: [&str; 4] = [
    "/usr/share/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/usr/local/etc/vulkan/icd.d",
];

/// Where the Vulkan loader library lives on common Linux layouts.
const LOADERS: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
    "/usr/lib/aarch64-linux-gnu/libvulkan.so.1",
    "/usr/lib64/libvulkan.so.1",
    "/usr/lib/libvulkan.so.1",
];

/// The install line the skip reason suggests.
pub const INSTALL: &str = "apt-get install mesa-vulkan-drivers libvulkan1";

/// `None` when a Vulkan loader and at least one driver manifest are present;
/// otherwise why the suites cannot run here.
pub fn missing() -> Option<String> {
    let loader = LOADERS.iter().any(|p| Path::new(p).exists())
        || Command::new("ldconfig")
            .arg("-p")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("libvulkan.so.1"));
    if !loader {
        return Some(format!("no Vulkan loader (libvulkan.so.1); {INSTALL}"));
    }
    let named = ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"]
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
    let found = ICD_DIRS.iter().any(|dir| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
    });
    if !named && !found {
        return Some(format!(
            "no Vulkan driver manifest in {}; {INSTALL}",
            ICD_DIRS[0]
        ));
    }
    None
}

/// The devices `vulkaninfo --summary` lists (`deviceName = …`), for the log;
/// empty without `vulkaninfo` (Debian's `vulkan-tools`).
pub fn devices() -> Vec<String> {
    let Ok(out) = Command::new("vulkaninfo").arg("--summary").output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("deviceName"))
        .map(|rest| rest.trim_start_matches([' ', '=']).trim().to_string())
        .collect()
}
