//! Random byte strings, decoded into programs, run against the model.

use mem_reliability::{decode, run_program};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_decoded_program_keeps_every_invariant(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let program = decode(&bytes);
        if let Err(v) = run_program(&program) {
            prop_assert!(false, "{v}\nprogram: {:?}", program.ops);
        }
    }
}
