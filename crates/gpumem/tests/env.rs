//! `GPUMEM_CONF` read at build. One test in its own binary: the environment
//! is process-wide, so no other test may build a device meanwhile.

use gpumem::config::conf::CONF_VAR;
use gpumem::prelude::*;

#[test]
fn the_environment_overrides_code_and_a_bad_value_fails_the_build() {
    // SAFETY: this binary runs this one test, so no
    // other thread reads or writes the environment concurrently.
    unsafe { std::env::set_var(CONF_VAR, "budget:1MiB,streams:2") };
    let device = Device::host().streams(5).build().unwrap();
    assert_eq!(device.stream_count(), 2, "the variable wins over code");
    assert_eq!(device.budget().limit(), MIB);

    let ignored = Device::host().streams(5).ignore_env().build().unwrap();
    assert_eq!(ignored.stream_count(), 5);

    // SAFETY: as above.
    unsafe { std::env::set_var(CONF_VAR, "budgte:1MiB") };
    let err = Device::host().build().unwrap_err();
    assert!(
        matches!(&err, GpuMemError::UnknownConfKey { key, .. } if key == "budgte"),
        "{err}"
    );

    // SAFETY: as above.
    unsafe { std::env::remove_var(CONF_VAR) };
    assert_eq!(GpumemConfig::from_env().unwrap(), GpumemConfig::default());
}
