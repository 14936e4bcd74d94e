use super::ops::chunk_sizes;

const G: u64 = 2 << 20;

#[test]
fn a_buffer_is_padded_to_whole_granules_and_split_at_the_largest_chunk() {
    assert_eq!(chunk_sizes(1, G, 64 * G), vec![G]);
    assert_eq!(chunk_sizes(3 * G, G, 2 * G), vec![2 * G, G]);
    assert_eq!(chunk_sizes(4 * G, G, 2 * G), vec![2 * G, 2 * G]);
    // A largest chunk under one granule still makes whole granules.
    assert_eq!(chunk_sizes(2 * G, G, 1), vec![G, G]);
}

fn chunk(offset: u64, bytes: u64, used: u64) -> super::SharedChunk {
    let fd = std::fs::File::open("/dev/null")
        .expect("/dev/null opens")
        .into();
    super::SharedChunk {
        fd,
        offset,
        bytes,
        used,
    }
}

fn shared(len: u64, chunks: Vec<super::SharedChunk>) -> super::SharedBuffer {
    super::SharedBuffer {
        device: "host:0".into(),
        len,
        chunks,
    }
}

#[test]
fn a_descriptor_is_whole_chunks_end_to_end_each_holding_bytes_of_the_buffer() {
    use super::ops::check;
    assert!(check(&shared(G + 1, vec![chunk(0, G, G), chunk(G, G, 1)]), G).is_ok());
    // A chunk of padding only: an importer would map memory no byte of the
    // buffer lies in.
    assert!(check(&shared(G, vec![chunk(0, G, G), chunk(G, G, 0)]), G).is_err());
    // Too short, a gap, a chunk off the granularity, none at all.
    assert!(check(&shared(3 * G, vec![chunk(0, G, G), chunk(G, G, G)]), G).is_err());
    assert!(check(&shared(2 * G, vec![chunk(0, G, G), chunk(2 * G, G, G)]), G).is_err());
    assert!(check(&shared(G, vec![chunk(0, G + 4096, G)]), G).is_err());
    assert!(check(&shared(G, Vec::new()), G).is_err());
}
