//! The pickle reader against pickles Python wrote (`pickle.dumps` at
//! protocols 2 and 5; the bytes are inlined so the tests need no Python).

use super::*;

const SHARED_P2: &[u8] = &[
    128, 2, 93, 113, 0, 40, 125, 113, 1, 40, 88, 8, 0, 0, 0, 102, 105, 108, 101, 110, 97, 109, 101,
    113, 2, 88, 8, 0, 0, 0, 116, 114, 97, 105, 110, 46, 112, 121, 113, 3, 88, 4, 0, 0, 0, 108, 105,
    110, 101, 113, 4, 75, 12, 117, 104, 1, 101, 46,
];
const SHARED_P5: &[u8] = &[
    128, 5, 149, 42, 0, 0, 0, 0, 0, 0, 0, 93, 148, 40, 125, 148, 40, 140, 8, 102, 105, 108, 101,
    110, 97, 109, 101, 148, 140, 8, 116, 114, 97, 105, 110, 46, 112, 121, 148, 140, 4, 108, 105,
    110, 101, 148, 75, 12, 117, 104, 1, 101, 46,
];
const NUMBERS_P2: &[u8] = &[
    128, 2, 93, 113, 0, 40, 74, 255, 255, 255, 255, 75, 255, 77, 255, 255, 74, 255, 255, 255, 127,
    74, 0, 0, 0, 128, 138, 9, 255, 255, 255, 255, 255, 255, 255, 255, 0, 138, 9, 0, 0, 0, 0, 0, 0,
    0, 0, 192, 138, 26, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 71, 63, 248, 0, 0, 0, 0, 0, 0, 136, 78, 101, 46,
];
const NUMBERS_P5: &[u8] = &[
    128, 5, 149, 86, 0, 0, 0, 0, 0, 0, 0, 93, 148, 40, 74, 255, 255, 255, 255, 75, 255, 77, 255,
    255, 74, 255, 255, 255, 127, 74, 0, 0, 0, 128, 138, 9, 255, 255, 255, 255, 255, 255, 255, 255,
    0, 138, 9, 0, 0, 0, 0, 0, 0, 0, 0, 192, 138, 26, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 71, 63, 248, 0, 0, 0, 0, 0, 0, 136, 78, 101, 46,
];
const RECURSIVE_P2: &[u8] = &[128, 2, 93, 113, 0, 104, 0, 97, 46];
const RECURSIVE_P5: &[u8] = &[128, 5, 149, 6, 0, 0, 0, 0, 0, 0, 0, 93, 148, 104, 0, 97, 46];

fn s(text: &str) -> Py {
    Py::Str(text.into())
}

#[test]
fn a_dict_referenced_twice_keeps_its_keys_both_times() {
    for bytes in [SHARED_P2, SHARED_P5] {
        let Py::List(items) = decode(bytes).unwrap() else {
            panic!("a list")
        };
        assert_eq!(items.len(), 2);
        for item in items.iter() {
            assert_eq!(item.get("filename"), Some(&s("train.py")));
            assert_eq!(item.get("line"), Some(&Py::Int(12)));
        }
        let (Py::Dict(a), Py::Dict(b)) = (&items[0], &items[1]) else {
            panic!("dicts")
        };
        assert!(Rc::ptr_eq(a, b), "the shared dict is one value");
    }
}

#[test]
fn integers_of_every_width_and_the_other_scalars_decode() {
    for bytes in [NUMBERS_P2, NUMBERS_P5] {
        let Py::List(items) = decode(bytes).unwrap() else {
            panic!("a list")
        };
        let expected = [
            Py::Int(-1),
            Py::Int(255),
            Py::Int(65535),
            Py::Int((1 << 31) - 1),
            Py::Int(-(1 << 31)),
            Py::Int(u64::MAX.into()),
            Py::Int(-(1i128 << 70)),
            Py::HugeInt(26),
            Py::Float(1.5),
            Py::Bool(true),
            Py::None,
        ];
        assert_eq!(&items[..], &expected[..]);
    }
}

#[test]
fn a_list_containing_itself_reads_the_inner_reference_as_none() {
    for bytes in [RECURSIVE_P2, RECURSIVE_P5] {
        assert_eq!(decode(bytes).unwrap(), Py::List(vec![Py::None].into()));
    }
}

#[test]
fn truncated_or_malformed_input_is_an_error_with_its_offset() {
    let cut = &SHARED_P5[..SHARED_P5.len() - 6];
    let err = decode(cut).unwrap_err();
    assert!(err.reason.contains("ends"), "{err:?}");
    let err = decode(&[0x80, 5, 0xff]).unwrap_err();
    assert_eq!(
        (err.offset, err.reason.as_str()),
        (2, "unknown opcode 0xff")
    );
    assert!(decode(&[]).is_err());
    assert!(
        decode(b"\x80\x04h\x07.").is_err(),
        "a memo entry never stored"
    );
    assert!(
        decode(b"\x80\x04a.").is_err(),
        "append with nothing on the stack"
    );
    let err = decode(b"hello").unwrap_err();
    assert_eq!(err.offset, 0, "not a pickle of protocol 2 or later");
}

#[test]
fn nesting_deeper_than_the_limit_is_refused_not_a_stack_overflow() {
    let mut bytes = vec![0x80, 4];
    bytes.extend(std::iter::repeat_n(b']', 10_000));
    bytes.extend(std::iter::repeat_n(b'a', 9_999));
    bytes.push(b'.');
    let err = decode(&bytes).unwrap_err();
    assert!(err.reason.contains("nested"), "{err:?}");
}
