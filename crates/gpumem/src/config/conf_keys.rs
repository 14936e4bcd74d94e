//! The keys of `GPUMEM_CONF`, in one table that the parser
//! ([`GpumemConfig::apply_conf`](super::GpumemConfig::apply_conf)), the
//! value parsers' messages and `gpumem replay --config` all read.

/// Every key: its name, the values it accepts, and what it does.
pub const CONF_KEYS: &[(&str, &str, &str)] = &[
    (
        "pools",
        "auto | arenas | sub_slices | exclusive | sliced | pools in routing order \
         (sliced:PAGE/MAX, exclusive:MAX[@PERIOD], arena:MAX[@THRESHOLD], e.g. \
         pools:sliced:8MiB/64KiB,exclusive:20GiB)",
        "pool layout of every stream (auto: arenas where the device has virtual memory; \
         the grammar of gpumem::config::layout)",
    ),
    (
        "page_size",
        "bytes (2MiB)",
        "first page size of pools:sliced",
    ),
    (
        "max_slice",
        "bytes (64MiB)",
        "largest slice of pools:sliced",
    ),
    ("max_page", "bytes (1GiB)", "largest page allocated at once"),
    (
        "budget",
        "bytes (8GiB) | fraction (0.9) | percent (90%) | unlimited",
        "device budget charged for every page",
    ),
    ("streams", "1..=1024", "streams the device starts with"),
    ("lazy_pages", "true | false", "map pages on first touch"),
    (
        "arena_max_chunk",
        "bytes (64MiB)",
        "largest physical chunk an arena creates (larger: fewer driver calls, more memory)",
    ),
    (
        "arena_idle_share",
        "1/N with N in 1..=1024 (1/16) | never",
        "idle arena chunks past this share of the mapped ones are unmapped for reuse \
         (smaller or never: less driver time, more memory)",
    ),
    (
        "relocate",
        "auto | manual",
        "relocate outdated pages when the trigger asks",
    ),
    (
        "poison",
        "on | off | a byte (0xDB)",
        "fill freed memory before reuse",
    ),
    (
        "bypass_caching",
        "true | false",
        "every reservation is a storage allocation",
    ),
    (
        "driver_cost",
        "a100 | a100-per-call | a100-per-byte | zero | entries key=latency, e.g. driver_cost:create=20us+86us/2MiB,map=1.2us \
         (keys: create, map, set_access, unmap, release, address_reserve, address_free, alloc, \
         free, alloc_async, free_async, stream_sync, device_sync, event_record, event_query; \
         latency: a time per call with an optional part per size, units ns, us, ms)",
        "the modeled latency of driver calls on the host and simulated backends \
         (entries not named keep the A100 table's figure)",
    ),
    (
        "share",
        "off | posix_fd | fabric",
        "make shareable buffers (Stream::reserve_shareable) with a POSIX fd handle, and FABRIC \
         beside it where the driver allows (else the fd alone, reported); docs/sharing.md",
    ),
    (
        "share_rdma",
        "true | false (needs share on)",
        "ask for GPUDirect RDMA on shareable buffers' chunks (dropped where the driver refuses, reported)",
    ),
];
