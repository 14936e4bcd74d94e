use super::chunk_sizes;

const G: u64 = 2 << 20;

#[test]
fn a_buffer_is_padded_to_whole_granules_and_split_at_the_largest_chunk() {
    assert_eq!(chunk_sizes(1, G, 64 * G), vec![G]);
    assert_eq!(chunk_sizes(3 * G, G, 2 * G), vec![2 * G, G]);
    assert_eq!(chunk_sizes(4 * G, G, 2 * G), vec![2 * G, 2 * G]);
    // A largest chunk under one granule still makes whole granules.
    assert_eq!(chunk_sizes(2 * G, G, 1), vec![G, G]);
}
