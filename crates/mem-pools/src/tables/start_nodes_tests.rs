//! Tests of `start_nodes.rs`: the open-addressed map against `HashMap`
//! under random inserts and removes, with colliding keys and growth.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

#[test]
fn an_inserted_unit_is_found_until_removed_and_a_second_insert_replaces_its_node() {
    let mut m = StartNodes::default();
    assert_eq!(m.get(0), None, "an empty map finds nothing");
    m.remove(5);
    m.insert(0, 1);
    m.insert(65_536, 2);
    assert_eq!(
        (m.get(0), m.get(65_536), m.get(1)),
        (Some(1), Some(2), None)
    );
    m.insert(65_536, 3);
    assert_eq!((m.get(65_536), m.len()), (Some(3), 2));
    m.remove(0);
    assert_eq!((m.get(0), m.get(65_536), m.len()), (None, Some(3), 1));
    m.remove(0);
    assert_eq!(m.len(), 1, "removing an absent unit changes nothing");
}

#[test]
fn entries_sharing_a_home_stay_reachable_after_any_one_of_them_is_removed() {
    // Units whose hashes share the top bits of an 8-entry table.
    let mut probe = StartNodes::default();
    probe.insert(u64::MAX - 1, 0);
    let home = probe.home(0);
    let same: Vec<u64> = (1..100_000u64)
        .filter(|&u| probe.home(u) == home)
        .take(3)
        .collect();
    assert_eq!(same.len(), 3, "three colliding units found");
    for victim in 0..3 {
        let mut m = StartNodes::default();
        for (i, &u) in same.iter().enumerate() {
            m.insert(u, i as u32);
        }
        m.remove(same[victim]);
        for (i, &u) in same.iter().enumerate() {
            let want = (i != victim).then_some(i as u32);
            assert_eq!(m.get(u), want, "unit {u} after removing {victim}");
        }
    }
}

#[test]
fn random_inserts_and_removes_agree_with_a_hash_map() {
    for seed in 0..8 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut m = StartNodes::default();
        let mut want: HashMap<u64, u32> = HashMap::new();
        // Units as the engine makes them: multiples of a slice size, plus
        // some small ones, so homes collide and probe runs wrap.
        let step = [1u64, 64, 4096, 65_536][seed as usize % 4];
        for op in 0..20_000u32 {
            let unit = rng.random_range(0..600u64) * step;
            if rng.random_bool(0.55) {
                m.insert(unit, op);
                want.insert(unit, op);
            } else {
                m.remove(unit);
                want.remove(&unit);
            }
            assert_eq!(m.len(), want.len(), "seed {seed} op {op}");
            if op % 64 == 0 {
                for u in 0..600u64 {
                    let u = u * step;
                    assert_eq!(
                        m.get(u),
                        want.get(&u).copied(),
                        "seed {seed} op {op} unit {u}"
                    );
                }
            }
        }
    }
}
