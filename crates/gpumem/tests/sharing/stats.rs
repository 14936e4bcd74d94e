//! Shareable and imported buffers are counted in the device's statistics
//! while they live, outside `reserved_bytes`, and the report says so.

use gpumem::prelude::*;
use gpumem::stats::SharingStats;

use crate::sharing_device;

#[test]
fn a_devices_statistics_count_its_shareable_and_imported_buffers_while_they_live() {
    let exporter = sharing_device();
    let stream = exporter.default_stream();
    let pooled_before = exporter.stats().reserved_bytes.current;
    // 5 MiB + 1 byte: three 2 MiB chunks, 6 MiB mapped.
    let buffer = stream.reserve_shareable(5 * MIB + 1).unwrap();
    let second = stream.reserve_shareable(MIB).unwrap();
    let stats = exporter.stats();
    assert_eq!(
        stats.sharing,
        SharingStats {
            exported_buffers: 2,
            exported_bytes: 8 * MIB,
            imported_buffers: 0,
            imported_bytes: 0,
        }
    );
    // Outside every pool: the pools' reserved bytes did not move.
    assert_eq!(stats.reserved_bytes.current, pooled_before);
    assert_eq!(stream.stats().sharing, SharingStats::default());

    let importer = Device::host().ignore_env().build().unwrap();
    let imported = importer.import(stream.export(&buffer).unwrap()).unwrap();
    assert_eq!(
        importer.stats().sharing,
        SharingStats {
            exported_buffers: 0,
            exported_bytes: 0,
            imported_buffers: 1,
            imported_bytes: 6 * MIB,
        }
    );
    let report = importer.memory_report().to_string();
    assert!(
        report.contains("shared outside the pools: 0 exported (0 B, charged to the budget), 1 imported (6.00 MiB)"),
        "{report}"
    );

    drop(second);
    assert_eq!(exporter.stats().sharing.exported_bytes, 6 * MIB);
    drop(imported);
    drop(buffer);
    assert_eq!(importer.stats().sharing, SharingStats::default());
    assert_eq!(exporter.stats().sharing, SharingStats::default());
    assert!(
        !exporter
            .memory_report()
            .to_string()
            .contains("shared outside")
    );
}
