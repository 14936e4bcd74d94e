//! Fuzz target: any bytes → a program across streams → run against the
//! model with every invariant checked after every step. A violation panics
//! (libFuzzer saves the input); the same bytes replay on stable through
//! `mem_reliability::run_program(&decode(bytes))`, and a saved input
//! copied into `fuzz/corpus/program/` becomes a regression test.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let program = mem_reliability::decode(data);
    if let Err(violation) = mem_reliability::run_program(&program) {
        panic!("{violation}\nops: {:?}", program.ops);
    }
});
