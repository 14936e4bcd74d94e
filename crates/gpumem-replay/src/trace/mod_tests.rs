//! Format detection: extensions first, then the first bytes.

use super::*;

fn detect(name: &str, head: &[u8]) -> Result<TraceFormat> {
    detect_format(Path::new(name), head)
}

#[test]
fn the_extension_decides_first() {
    assert_eq!(detect("a.jsonl", b"").unwrap(), TraceFormat::Jsonl);
    assert_eq!(detect("a.CSV", b"{").unwrap(), TraceFormat::RmmCsv);
    assert_eq!(detect("snap.pickle", b"").unwrap(), TraceFormat::Pytorch);
    assert_eq!(detect("snap.pkl", b"").unwrap(), TraceFormat::Pytorch);
}

#[test]
fn without_a_known_extension_the_first_bytes_decide() {
    assert_eq!(detect("t", b"\x80\x04\x95").unwrap(), TraceFormat::Pytorch);
    assert_eq!(detect("t", b"  {\"op\":").unwrap(), TraceFormat::Jsonl);
    assert_eq!(detect("t", b"Thread,Time").unwrap(), TraceFormat::RmmCsv);
    assert_eq!(
        detect("t.log", b"140573,12:00").unwrap(),
        TraceFormat::RmmCsv
    );
}

#[test]
fn gzip_is_known_by_its_gz_name_or_its_magic_bytes() {
    assert!(is_gzip(Path::new("a.jsonl.gz"), b"{"));
    assert!(is_gzip(Path::new("a.JSONL.GZ"), b""));
    assert!(is_gzip(Path::new("trace"), b"\x1f\x8b\x08\x00"));
    assert!(is_gzip(Path::new("a.jsonl"), b"\x1f\x8b"));
    assert!(!is_gzip(Path::new("a.jsonl"), b"{\"op\""));
    assert!(!is_gzip(Path::new("a.gzip-notes"), b"\x1f"));
}

#[test]
fn a_byte_order_mark_or_a_reordered_csv_header_is_still_recognized() {
    assert_eq!(
        detect("t", b"\xef\xbb\xbf{\"op\":").unwrap(),
        TraceFormat::Jsonl
    );
    assert_eq!(
        detect("t", b"\xef\xbb\xbfThread,Time").unwrap(),
        TraceFormat::RmmCsv
    );
    assert_eq!(
        detect("t", b"Action,Pointer,Size").unwrap(),
        TraceFormat::RmmCsv
    );
    assert_eq!(detect("t", b" \n\n").unwrap(), TraceFormat::Jsonl);
}

#[test]
fn an_empty_or_unrecognized_file_asks_for_a_format() {
    let empty = detect("t", b"").unwrap_err().to_string();
    assert!(
        empty.contains("empty") && empty.contains("--format"),
        "{empty}"
    );
    let other = detect("t", b"hello").unwrap_err().to_string();
    assert!(other.contains("none of"), "{other}");
}
