//! `Slab`: live entries in a `Vec`, named by ids that encode their slot.
//!
//! Why: a chunk is looked up on every create, map, unmap and release, and an
//! ordered or hashed map charged the simulated device hundreds of
//! nanoseconds per call for it. Here an id is `generation << 32 | slot + 1`,
//! so a lookup is one bounds check and one compare, and a freed slot is
//! reused under the next generation — the id itself is never issued again,
//! so a stale id is still caught. The first id of each slot is its index
//! plus one (1, 2, 3, ... as the old counter issued them). A slot whose
//! generation would wrap is retired, never reused.

/// Live entries of type `T` keyed by never-reused `u64` ids (never 0).
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Indices of empty slots, reused last-freed first.
    free: Vec<u32>,
    len: usize,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

fn encode(generation: u32, index: u32) -> u64 {
    (u64::from(generation) << 32) | (u64::from(index) + 1)
}

/// The slot index and generation an id names; `None` for 0 (no id).
fn decode(id: u64) -> Option<(usize, u32)> {
    let index = (id as u32).checked_sub(1)?;
    Some((index as usize, (id >> 32) as u32))
}

impl<T> Slab<T> {
    /// Store `value` and name it, or give it back when every one of the
    /// 2^32 - 1 slots is live or retired.
    pub(crate) fn insert(&mut self, value: T) -> Result<u64, T> {
        let index = match self.free.pop() {
            Some(index) => index,
            None => match u32::try_from(self.slots.len()) {
                Ok(index) if index < u32::MAX => {
                    self.slots.push(Slot {
                        generation: 0,
                        value: None,
                    });
                    index
                }
                _ => return Err(value),
            },
        };
        let slot = &mut self.slots[index as usize];
        slot.value = Some(value);
        self.len += 1;
        Ok(encode(slot.generation, index))
    }

    /// Whether [`Slab::insert`] would find a slot.
    pub(crate) fn has_room(&self) -> bool {
        !self.free.is_empty() || self.slots.len() < u32::MAX as usize
    }

    fn slot(&self, id: u64) -> Option<&Slot<T>> {
        let (index, generation) = decode(id)?;
        self.slots.get(index).filter(|s| s.generation == generation)
    }

    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        self.slot(id)?.value.as_ref()
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let (index, generation) = decode(id)?;
        let slot = self.slots.get_mut(index)?;
        (slot.generation == generation)
            .then_some(slot.value.as_mut())
            .flatten()
    }

    /// Take the entry out; its id is never valid again.
    pub(crate) fn remove(&mut self, id: u64) -> Option<T> {
        let (index, generation) = decode(id)?;
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        let value = slot.value.take()?;
        self.len -= 1;
        if let Some(next) = slot.generation.checked_add(1) {
            slot.generation = next;
            // `index` came from a `u32` when the slot was made.
            self.free.push(index as u32);
        }
        Some(value)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Take every live entry with its id (for a backend's `Drop`). The
    /// slots stay, a generation on, so no id is issued twice even then.
    pub(crate) fn take_all(&mut self) -> Vec<(u64, T)> {
        let mut out = Vec::with_capacity(self.len);
        for index in 0..self.slots.len() {
            let id = encode(self.slots[index].generation, index as u32);
            if let Some(value) = self.remove(id) {
                out.push((id, value));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_ids_count_from_one_and_a_reused_slot_gets_a_new_id() {
        let mut slab = Slab::default();
        let ids: Vec<u64> = (0..3).map(|v| slab.insert(v).unwrap()).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(slab.remove(2), Some(1));
        let again = slab.insert(7).unwrap();
        assert_ne!(again, 2, "an id is never issued twice");
        assert_eq!(slab.get(2), None, "the stale id names nothing");
        assert_eq!(slab.get(again), Some(&7));
        assert_eq!(slab.remove(2), None);
    }

    #[test]
    fn zero_and_foreign_ids_name_nothing() {
        let mut slab = Slab::default();
        slab.insert(1).unwrap();
        for id in [0, u64::MAX, 1 << 32 | 1, 99] {
            assert_eq!(slab.get(id), None);
            assert_eq!(slab.get_mut(id), None);
            assert_eq!(slab.remove(id), None);
        }
        assert!(!slab.is_empty());
    }

    #[test]
    fn take_all_answers_every_live_entry_and_leaves_it_empty() {
        let mut slab = Slab::default();
        let a = slab.insert('a').unwrap();
        let b = slab.insert('b').unwrap();
        let c = slab.insert('c').unwrap();
        slab.remove(b);
        assert_eq!(slab.take_all(), [(a, 'a'), (c, 'c')]);
        assert!(slab.is_empty());
        assert_eq!(slab.get(a), None);
        let next = slab.insert('d').unwrap();
        assert!(![a, b, c].contains(&next), "ids stay unique after take_all");
    }
}
