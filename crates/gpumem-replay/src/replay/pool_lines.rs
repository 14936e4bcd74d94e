//! The report's pool lines summed over the memories of several streams
//! (which share one layout).

use gpumem::pools::PoolReport;

/// The pools of several memories with one layout, summed pool by pool
/// (peaks are the sum of each memory's peak: an upper bound of the pool's;
/// the largest allocation and free block are the largest of any memory's).
pub(crate) fn merged_pools<'a>(
    reports: impl IntoIterator<Item = &'a gpumem::pools::MemoryReport>,
) -> Vec<PoolReport> {
    let mut pools: Vec<PoolReport> = Vec::new();
    for report in reports {
        for (i, pool) in report.pools.iter().enumerate() {
            match pools.get_mut(i) {
                Some(sum) => {
                    sum.pages += pool.pages;
                    sum.pages_unmapped += pool.pages_unmapped;
                    sum.pages_with_live_data += pool.pages_with_live_data;
                    sum.slices += pool.slices;
                    sum.bytes_in_use += pool.bytes_in_use;
                    sum.bytes_padding += pool.bytes_padding;
                    sum.bytes_reserved += pool.bytes_reserved;
                    sum.peak_bytes_in_use += pool.peak_bytes_in_use;
                    sum.peak_bytes_reserved += pool.peak_bytes_reserved;
                    sum.peak_pages += pool.peak_pages;
                    sum.largest_alloc = sum.largest_alloc.max(pool.largest_alloc);
                    sum.largest_free_block = sum.largest_free_block.max(pool.largest_free_block);
                }
                None => pools.push(*pool),
            }
        }
    }
    pools
}
