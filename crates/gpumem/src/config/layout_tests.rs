use super::*;
use crate::config::GpumemConfig;
use crate::units::{KIB, MIB};

fn sliced(page_size: u64, max_slice_size: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::SlicedPages {
            page_size,
            max_slice_size,
        },
        dealloc_period: None,
    }
}

fn custom(pool_options: Vec<MemoryPoolOptions>) -> PoolLayout {
    PoolLayout::Pools(pool_options)
}

#[test]
fn the_words_and_their_older_spellings_name_the_same_layouts() {
    for (words, layout) in [
        (&["auto", "AUTO"][..], PoolLayout::Auto),
        (&["arenas", "virtual_arenas"][..], PoolLayout::Arenas),
        (
            &["sub_slices", "sub-slices", " Sub-Slices "][..],
            PoolLayout::SubSlices,
        ),
        (
            &["exclusive", "exclusive_pages", "exclusive-pages"][..],
            PoolLayout::ExclusivePages,
        ),
        (&["sliced"][..], DEFAULT_SLICED),
    ] {
        for word in words {
            assert_eq!(parse_layout(word).unwrap(), layout, "{word}");
        }
    }
}

#[test]
fn a_pool_list_parses_in_routing_order_with_periods_and_thresholds() {
    let layout = parse_layout("sliced:8MiB/64KiB, sliced:512MiB/5GiB,exclusive:20GiB@7").unwrap();
    assert_eq!(
        layout,
        custom(vec![
            sliced(8 * MIB, 64 * KIB),
            sliced(512 * MIB, 5 * GIB),
            MemoryPoolOptions {
                pool_type: PoolType::ExclusivePages {
                    max_alloc_size: 20 * GIB
                },
                dealloc_period: Some(7),
            },
        ])
    );
    let arena = parse_layout("arena:1MiB@4MiB,arena:100GiB").unwrap();
    assert_eq!(
        arena,
        custom(vec![
            MemoryPoolOptions {
                pool_type: PoolType::VirtualArena {
                    max_slice_size: MIB,
                    range_size: 64 * GIB,
                    release_threshold: 4 * MIB,
                },
                dealloc_period: None,
            },
            MemoryPoolOptions {
                pool_type: PoolType::VirtualArena {
                    max_slice_size: 100 * GIB,
                    range_size: 100 * GIB,
                    release_threshold: DEFAULT_RELEASE_THRESHOLD,
                },
                dealloc_period: None,
            },
        ])
    );
}

#[test]
fn a_layout_written_by_format_layout_reads_back_the_same() {
    let layout = custom(vec![
        sliced(65536, 65536),
        sliced(4097, 81930),
        sliced(3_296_722_944, 5 * GIB),
        MemoryPoolOptions {
            pool_type: PoolType::ExclusivePages {
                max_alloc_size: 20 * GIB,
            },
            dealloc_period: Some(5000),
        },
    ]);
    let text = format_layout(&layout);
    assert_eq!(
        text,
        "sliced:64KiB/64KiB,sliced:4097/81930,sliced:3144MiB/5GiB,exclusive:20GiB@5000"
    );
    assert_eq!(parse_layout(&text).unwrap(), layout);
    for named in [
        PoolLayout::Auto,
        PoolLayout::Arenas,
        PoolLayout::SubSlices,
        PoolLayout::ExclusivePages,
        DEFAULT_SLICED,
    ] {
        assert_eq!(parse_layout(&format_layout(&named)).unwrap(), named);
    }
}

#[test]
fn a_sliced_layout_with_its_own_sizes_is_written_as_the_conf_items_that_rebuild_it() {
    let layout = PoolLayout::Sliced {
        page_size: MIB,
        max_slice: 32 * MIB,
    };
    let text = format_layout(&layout);
    assert_eq!(text, "pools:sliced,page_size:1MiB,max_slice:32MiB");
    assert_eq!(GpumemConfig::from_conf(&text).unwrap().pools, layout);
}

#[test]
fn bad_layouts_are_errors_that_say_what_is_wrong_and_list_what_is_valid() {
    for (text, needle) in [
        ("", "empty"),
        ("subslices", "no `kind:` prefix"),
        ("sliced:8MiB", "sliced:PAGE/MAX"),
        ("sliced:8MiB/0", "zero"),
        ("sliced:8XB/64KiB", "size `8XB` is not a size"),
        ("exclusive:-1", "size `-1` is not a size"),
        ("exclusive:1GiB@soon", "period"),
        ("pinned:1GiB", "unknown kind `pinned`"),
        ("exclusive:99999999999TiB", "does not fit in 64 bits"),
        (
            "sliced:8MiB/1GiB,exclusive:512MiB",
            "pool 2 (`exclusive:512MiB`) could never serve",
        ),
        ("sliced:8MiB/64KiB,", "no `kind:` prefix"),
    ] {
        let err = parse_layout(text).unwrap_err();
        assert!(err.reason.contains(needle), "{text:?}: {err}");
        let message = err.to_string();
        assert!(
            message.contains("sub_slices") && message.contains("exclusive:MAX"),
            "the error lists the syntax: {message}"
        );
    }
}

#[test]
fn gpumem_conf_pools_takes_every_layout_the_parser_takes_even_a_list_beside_other_keys() {
    for text in [
        "auto",
        "Sub-Slices",
        "exclusive-pages",
        "sliced:8MiB/64KiB,sliced:512MiB/5GiB,exclusive:20GiB@7",
        "arena:1MiB,arena:64GiB",
    ] {
        let conf = GpumemConfig::from_conf(&format!("pools:{text}")).unwrap();
        assert_eq!(conf.pools, parse_layout(text).unwrap(), "{text}");
    }
    let conf =
        GpumemConfig::from_conf("budget:8GiB,pools:sliced:8MiB/64KiB,exclusive:1GiB,streams:2")
            .unwrap();
    assert_eq!(
        conf.pools,
        parse_layout("sliced:8MiB/64KiB,exclusive:1GiB").unwrap()
    );
    assert_eq!(
        (conf.streams, conf.budget),
        (2, crate::config::Budget::Bytes(8 * GIB))
    );
    // A pool item with no `pools:` before it is an unknown key, not a layout.
    assert!(GpumemConfig::from_conf("budget:8GiB,sliced:8MiB/64KiB").is_err());
    let err = GpumemConfig::from_conf("pools:sliced:8MiB").unwrap_err();
    assert!(err.to_string().contains("exclusive:MAX"), "{err}");
}

#[test]
fn a_custom_layout_with_an_arena_pool_gets_the_device_virtual_memory() {
    let device = crate::Device::simulated(8 * GIB)
        .pools(parse_layout("sliced:8MiB/64KiB,arena:64GiB").unwrap())
        .ignore_env()
        .build()
        .unwrap();
    let buffer = device.default_stream().reserve(3 * MIB).unwrap();
    let report = device.memory_report();
    assert!(report.virtual_memory.is_some(), "{report}");
    assert!(report.stats.chunks.maps > 0, "{report}");
    drop(buffer);
}

#[test]
fn every_layout_word_parses_to_the_layout_of_that_name() {
    for word in LAYOUT_WORDS {
        let layout = parse_layout(word).unwrap();
        assert_eq!(layout.name(), word, "{word}");
        assert!(LAYOUT_SYNTAX.contains(&format!("`{word}`")), "{word}");
    }
}
