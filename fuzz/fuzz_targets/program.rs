//! Fuzz target: any bytes → a program across streams → run against the
//! model with every invariant checked after every step, twice: decoded
//! for the paged world (`decode`) and for an arena world whose streams
//! complete their work only when the program says so (`decode_lazy`: the
//! one that reaches stream-ordered reclamation). A violation panics
//! (libFuzzer saves the input); the same bytes replay on stable through
//! `mem_reliability::run_program`, and a saved input copied into
//! `fuzz/corpus/program/` becomes a regression test of both decodings.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for program in [
        mem_reliability::decode(data),
        mem_reliability::decode_lazy(data),
    ] {
        if let Err(violation) = mem_reliability::run_program(&program) {
            panic!(
                "{violation}\nlazy streams: {}\nops: {:?}",
                program.lazy_streams, program.ops
            );
        }
    }
});
