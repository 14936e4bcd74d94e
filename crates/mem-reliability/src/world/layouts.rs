//! The pool layouts a world runs on: the device limits, the paged layouts
//! and the arena layouts a program picks by index.

use mem_pools::{MemoryConfiguration, MemoryDeviceProperties, MemoryPoolOptions, PoolType};

/// Device limits every slice and page obeys: 1 MiB pages, 256-byte alignment.
pub fn props() -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size: 1 << 20,
        alignment: 256,
    }
}

/// Number of layouts [`layout`] knows.
pub const LAYOUTS: usize = 3;

/// Layout `index % LAYOUTS` and the largest size it routes in Auto mode.
///
/// 0: a growable sliced pool (4 KiB pages up to 64 KiB slices, so growth
/// leaves outdated pages to relocate) then exclusive pages to 256 KiB;
/// 1: fixed 16 KiB sliced pages, exclusive to 128 KiB; 2: exclusive pages
/// only, to 600 000 bytes. No pool ages pages out, so a refused reservation
/// must leave reserved bytes exactly as they were.
pub fn layout(index: usize) -> (MemoryConfiguration, u64) {
    let sliced = |page_size, max_slice_size| MemoryPoolOptions {
        pool_type: PoolType::SlicedPages {
            page_size,
            max_slice_size,
        },
        dealloc_period: None,
    };
    let exclusive = |max_alloc_size| MemoryPoolOptions {
        pool_type: PoolType::ExclusivePages { max_alloc_size },
        dealloc_period: None,
    };
    let (pool_options, max) = match index % LAYOUTS {
        0 => (vec![sliced(4096, 65_536), exclusive(262_144)], 262_144),
        1 => (vec![sliced(16_384, 16_384), exclusive(131_072)], 131_072),
        _ => (vec![exclusive(600_000)], 600_000),
    };
    (MemoryConfiguration::Custom { pool_options }, max)
}

/// Number of layouts [`arena_layout`] knows.
pub const ARENA_LAYOUTS: usize = 3;

/// Chunk granularity of an arena world's virtual memory (64 KiB: slices
/// of the layouts span from one to ten chunks).
pub const ARENA_GRANULARITY: u64 = 64 << 10;

/// Arena-world layout `index % ARENA_LAYOUTS` and the largest size it
/// routes in Auto mode.
///
/// 0: one arena to 600 000 bytes over 1 MiB ranges (a fragmented range
/// makes the pool reserve another), caching two chunks; 1: a small-slice
/// arena (to 16 KiB, 256 KiB ranges, caching one chunk), the growable
/// sliced pool of [`layout`] 0 (4 KiB pages to 64 KiB slices) and a large
/// arena to 600 000 bytes that caches nothing; 2: [`layout`] 0 (paged
/// only), so install moves between arenas and pages.
pub fn arena_layout(index: usize) -> (MemoryConfiguration, u64) {
    let arena = |max_slice_size, range_size, release_threshold| MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size,
            range_size,
            release_threshold,
        },
        dealloc_period: None,
    };
    let g = ARENA_GRANULARITY;
    let pool_options = match index % ARENA_LAYOUTS {
        0 => vec![arena(600_000, 1 << 20, 2 * g)],
        1 => vec![
            arena(16_384, 256 << 10, g),
            MemoryPoolOptions {
                pool_type: PoolType::SlicedPages {
                    page_size: 4096,
                    max_slice_size: 65_536,
                },
                dealloc_period: None,
            },
            arena(600_000, 1 << 20, 0),
        ],
        _ => return layout(0),
    };
    (MemoryConfiguration::Custom { pool_options }, 600_000)
}
