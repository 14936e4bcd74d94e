//! `GPUMEM_CONF` parsing (a pure function) and configuration checks.

use gpumem::config::conf::CONF_KEYS;
use gpumem::config::{DEFAULT_POISON, DEFAULT_SLICED};
use gpumem::prelude::*;

#[test]
fn every_key_sets_its_setting() {
    let config = GpumemConfig::from_conf(
        "pools:sliced, page_size:1MiB, max_slice:32MiB, max_page:512MiB, budget:8GiB, \
         streams:4, lazy_pages:true, relocate:auto, poison:0xAB, bypass_caching:on, \
         arena_max_chunk:32MiB, arena_idle_share:1/8",
    )
    .unwrap();
    let mut expected = GpumemConfig::default();
    expected.pools = PoolLayout::Sliced {
        page_size: MIB,
        max_slice: 32 * MIB,
    };
    expected.max_page_size = Some(512 * MIB);
    expected.budget = Budget::Bytes(8 * GIB);
    expected.streams = 4;
    expected.lazy_pages = true;
    expected.auto_relocate = true;
    expected.poison = Some(0xAB);
    expected.bypass_caching = true;
    expected.arena_max_chunk = Some(32 * MIB);
    expected.arena_idle_share = Some(8);
    expected.driver_costs = gpumem::storage::DriverCosts::A100;
    expected.share = None;
    assert_eq!(config, expected);
}

#[test]
fn an_empty_string_changes_nothing() {
    assert_eq!(
        GpumemConfig::from_conf("").unwrap(),
        GpumemConfig::default()
    );
    assert_eq!(
        GpumemConfig::from_conf(" , ,").unwrap(),
        GpumemConfig::default()
    );
}

#[test]
fn an_idle_share_is_one_in_n_or_never() {
    let share = |s: &str| GpumemConfig::from_conf(&format!("arena_idle_share:{s}"));
    assert_eq!(share("1/16").unwrap().arena_idle_share, Some(16));
    assert_eq!(share("never").unwrap().arena_idle_share, Some(0));
    for bad in ["16", "1/0", "2/16", "1/2000", "0.0625", "always"] {
        assert!(
            matches!(
                share(bad),
                Err(GpuMemError::BadConfValue {
                    key: "arena_idle_share",
                    ..
                })
            ),
            "{bad}"
        );
    }
}

#[test]
fn budgets_are_bytes_fractions_percentages_or_unlimited() {
    let budget = |s: &str| GpumemConfig::from_conf(&format!("budget:{s}")).map(|c| c.budget);
    assert_eq!(budget("512MiB").unwrap(), Budget::Bytes(512 * MIB));
    assert_eq!(budget("2GB").unwrap(), Budget::Bytes(2_000_000_000));
    assert_eq!(budget("0.9").unwrap(), Budget::Fraction(0.9));
    assert_eq!(budget("75%").unwrap(), Budget::Fraction(0.75));
    assert_eq!(budget("unlimited").unwrap(), Budget::Unlimited);
    for bad in ["1.5", "0.0", "150%", "0", "-1GiB", "lots"] {
        assert!(
            matches!(
                budget(bad),
                Err(GpuMemError::BadConfValue { key: "budget", .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn poison_takes_on_off_or_a_byte() {
    let poison = |s: &str| GpumemConfig::from_conf(&format!("poison:{s}")).map(|c| c.poison);
    assert_eq!(poison("on").unwrap(), Some(DEFAULT_POISON));
    assert_eq!(poison("off").unwrap(), None);
    assert_eq!(poison("0x5A").unwrap(), Some(0x5A));
    assert_eq!(poison("200").unwrap(), Some(200));
    assert!(matches!(
        poison("0x1FF"),
        Err(GpuMemError::BadConfValue { .. })
    ));
}

#[test]
fn an_unknown_key_is_an_error_that_lists_every_valid_key() {
    let err = GpumemConfig::from_conf("budget:1GiB,max_split_size_mb:20").unwrap_err();
    let GpuMemError::UnknownConfKey { key, valid } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(key, "max_split_size_mb");
    for (name, _, _) in CONF_KEYS {
        assert!(valid.contains(name), "{name} missing from {valid}");
    }
    assert!(err.to_string().contains("valid keys: pools, page_size"));
}

#[test]
fn a_bad_value_says_what_the_key_accepts() {
    let err = GpumemConfig::from_conf("pools:buddy").unwrap_err();
    assert!(matches!(err, GpuMemError::BadConfLayout { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("`buddy`") && text.contains("expected"),
        "{text}"
    );
    // The layout parser's reason names the part at fault.
    let err = GpumemConfig::from_conf("pools:sliced:8XB/64KiB").unwrap_err();
    let GpuMemError::BadConfLayout { source } = &err else {
        panic!("{err:?}")
    };
    assert!(!source.reason.is_empty(), "{err}");
    let err = GpumemConfig::from_conf("streams:0").unwrap_err();
    assert!(err.to_string().contains("1..=1024"), "{err}");
    let err = GpumemConfig::from_conf("relocate:sometimes").unwrap_err();
    assert!(err.to_string().contains("auto | manual"), "{err}");
    let err = GpumemConfig::from_conf("lazy_pages:maybe").unwrap_err();
    assert!(err.to_string().contains("true | false"), "{err}");
}

#[test]
fn malformed_items_and_duplicate_keys_are_refused() {
    assert!(matches!(
        GpumemConfig::from_conf("budget=8GiB"),
        Err(GpuMemError::MalformedConf { item }) if item == "budget=8GiB"
    ));
    assert!(matches!(
        GpumemConfig::from_conf("budget:1GiB,budget:2GiB"),
        Err(GpuMemError::DuplicateConfKey { key: "budget" })
    ));
}

#[test]
fn page_size_applies_only_to_the_sliced_layout() {
    assert!(matches!(
        GpumemConfig::from_conf("page_size:4MiB"),
        Err(GpuMemError::ConfNotApplicable {
            key: "page_size",
            layout: "auto"
        })
    ));
    let config = GpumemConfig::from_conf("max_slice:8MiB,pools:sliced").unwrap();
    let PoolLayout::Sliced { page_size, .. } = DEFAULT_SLICED else {
        unreachable!()
    };
    assert_eq!(
        config.pools,
        PoolLayout::Sliced {
            page_size,
            max_slice: 8 * MIB
        }
    );
}

#[test]
fn a_refused_string_leaves_the_configuration_unchanged() {
    let mut config = GpumemConfig::default();
    config.streams = 3;
    let before = config.clone();
    assert!(config.apply_conf("streams:2,budget:nope").is_err());
    assert_eq!(config, before);
    config.apply_conf("streams:2").unwrap();
    assert_eq!(config.streams, 2);
    assert_eq!(
        config.budget, before.budget,
        "keys not named keep their value"
    );
}

#[test]
fn values_set_from_code_are_checked_at_build() {
    let zero_streams = Device::host().streams(0).ignore_env().build();
    assert!(matches!(
        zero_streams,
        Err(GpuMemError::InvalidConfig {
            parameter: "streams",
            ..
        })
    ));
    let bad_fraction = Device::host()
        .budget(Budget::Fraction(1.5))
        .ignore_env()
        .build();
    assert!(matches!(
        bad_fraction,
        Err(GpuMemError::InvalidConfig {
            parameter: "budget fraction",
            ..
        })
    ));
    let zero_page = Device::host().max_page_size(0).ignore_env().build();
    assert!(zero_page.is_err());
}

#[test]
fn a_builder_conf_string_configures_the_device() {
    let device = Device::simulated(8 * GIB)
        .conf("budget:25%,streams:3,pools:exclusive")
        .unwrap()
        .ignore_env()
        .build()
        .unwrap();
    assert_eq!(device.stream_count(), 3);
    assert_eq!(device.budget().limit(), 2 * GIB);
    assert_eq!(device.config().pools, PoolLayout::ExclusivePages);
}
