use super::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn sliced(page_size: u64, max_slice_size: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::SlicedPages {
            page_size,
            max_slice_size,
        },
        dealloc_period: None,
    }
}

#[test]
fn the_named_layouts_and_the_documented_example_parse() {
    assert_eq!(
        parse_layout("sub-slices").unwrap(),
        MemoryConfiguration::SubSlices
    );
    assert_eq!(
        parse_layout(" exclusive-pages ").unwrap(),
        MemoryConfiguration::ExclusivePages
    );
    let custom = parse_layout("sliced:8MiB/64KiB, sliced:512MiB/5GiB,exclusive:20GiB@7").unwrap();
    assert_eq!(
        custom,
        MemoryConfiguration::Custom {
            pool_options: vec![
                sliced(8 * MIB, 64 << 10),
                sliced(512 * MIB, 5 * GIB),
                MemoryPoolOptions {
                    pool_type: PoolType::ExclusivePages {
                        max_alloc_size: 20 * GIB
                    },
                    dealloc_period: Some(7),
                },
            ]
        }
    );
}

#[test]
fn sizes_take_plain_bytes_and_binary_units_in_any_case() {
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("3kib"), Ok(3 << 10));
    assert_eq!(parse_size("2 GIB"), Ok(2 * GIB));
    assert_eq!(parse_size("1TiB"), Ok(1 << 40));
    assert_eq!(parse_size("17B"), Ok(17));
}

#[test]
fn a_layout_written_by_format_layout_reads_back_the_same() {
    let config = MemoryConfiguration::Custom {
        pool_options: vec![
            sliced(65536, 65536),
            sliced(4097, 81930),
            sliced(3_296_722_944, 5 * GIB),
            MemoryPoolOptions {
                pool_type: PoolType::ExclusivePages {
                    max_alloc_size: 20 * GIB,
                },
                dealloc_period: Some(5000),
            },
        ],
    };
    let text = format_layout(&config);
    assert_eq!(
        text,
        "sliced:64KiB/64KiB,sliced:4097/81930,sliced:3144MiB/5GiB,exclusive:20GiB@5000"
    );
    assert_eq!(parse_layout(&text).unwrap(), config);
    for named in [
        MemoryConfiguration::SubSlices,
        MemoryConfiguration::ExclusivePages,
    ] {
        assert_eq!(parse_layout(&format_layout(&named)).unwrap(), named);
    }
}

#[test]
fn bad_layouts_are_errors_that_say_what_is_wrong_and_list_what_is_valid() {
    for (text, needle) in [
        ("", "empty"),
        ("sub_slices", "no `kind:` prefix"),
        ("sliced:8MiB", "sliced:PAGE/MAX"),
        ("sliced:8MiB/0", "zero"),
        ("sliced:8MB/64KiB", "unknown unit `mb`"),
        ("exclusive:-1", "whole number"),
        ("exclusive:1GiB@soon", "period"),
        ("pinned:1GiB", "unknown kind `pinned`"),
        ("exclusive:99999999999TiB", "too large"),
        (
            "sliced:8MiB/1GiB,exclusive:512MiB",
            "pool 2 (`exclusive:512MiB`) could never serve",
        ),
        ("sliced:8MiB/64KiB,", "no `kind:` prefix"),
    ] {
        let err = parse_layout(text).unwrap_err().to_string();
        assert!(err.contains(needle), "{text:?}: {err}");
        assert!(
            err.contains("--config") && err.contains("sub-slices"),
            "{err}"
        );
        assert!(
            err.contains("exclusive:MAX"),
            "the error lists the syntax: {err}"
        );
    }
}
