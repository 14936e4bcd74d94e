//! The allocators `gpumem compare` knows, their names, and what their
//! "reserved" and "storage calls" mean.
//!
//! The peers do not hold memory the same way, so a table that puts their
//! numbers side by side must say what each number is; that text lives
//! here, next to the names, so the table and `--json` print the same.
//! Paged layouts are named by the facade's layout grammar
//! ([`gpumem::config::layout::parse_layout`]), so `--against sub-slices` means what
//! `GPUMEM_CONF=pools:sub-slices` means.

use gpumem::config::layout::parse_layout;
use gpumem::config::{DEFAULT_SLICED, PoolLayout};

use crate::error::{ReplayError, Result};

/// One row of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    /// `gpumem::Device` with its default configuration (`pools:auto`:
    /// arenas on `sim` and `host`), `GPUMEM_CONF` applied as for a program.
    Gpumem,
    /// `Device` on mem-pools' paged default, `pools:sub_slices`.
    SubSlices,
    /// `Device` on exclusive pages only, `pools:exclusive`.
    Exclusive,
    /// `Device` on one growable sliced pool, `pools:sliced`.
    Sliced,
    /// The bare O(1) offset allocator over one fixed heap.
    OffsetAllocator,
    /// The modeled PyTorch caching allocator, default settings.
    Pytorch,
    /// The modeled PyTorch caching allocator with `expandable_segments`.
    PytorchExpandable,
    /// The counting baseline: one device allocation per request.
    System,
}

/// Every allocator, in the order the table prints them by default.
pub const ALL: [Allocator; 8] = [
    Allocator::Gpumem,
    Allocator::SubSlices,
    Allocator::Exclusive,
    Allocator::Sliced,
    Allocator::OffsetAllocator,
    Allocator::Pytorch,
    Allocator::PytorchExpandable,
    Allocator::System,
];

impl Allocator {
    /// The row's name, as `--against` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Gpumem => "gpumem",
            Allocator::SubSlices => "sub_slices",
            Allocator::Exclusive => "exclusive",
            Allocator::Sliced => "sliced",
            Allocator::OffsetAllocator => "offset-allocator",
            Allocator::Pytorch => "pytorch",
            Allocator::PytorchExpandable => "pytorch-expandable",
            Allocator::System => "system",
        }
    }

    /// The facade layout of a paged row; `None` for the default row and
    /// the peers that are not gpumem.
    pub fn layout(self) -> Option<PoolLayout> {
        match self {
            Allocator::SubSlices => Some(PoolLayout::SubSlices),
            Allocator::Exclusive => Some(PoolLayout::ExclusivePages),
            Allocator::Sliced => Some(DEFAULT_SLICED),
            _ => None,
        }
    }

    /// Whether the row replays through `gpumem::Device`.
    pub fn is_gpumem(self) -> bool {
        matches!(
            self,
            Allocator::Gpumem | Allocator::SubSlices | Allocator::Exclusive | Allocator::Sliced
        )
    }

    /// What the row's "reserved" bytes are.
    pub fn reserved_means(self, arenas: bool) -> &'static str {
        match self {
            _ if self.is_gpumem() && arenas => {
                "physical chunks (2 MiB granules, up to arena_max_chunk each) mapped or cached under the arenas, plus persistent pages"
            }
            _ if self.is_gpumem() => "bytes of pages held from the device",
            Allocator::OffsetAllocator => "the heap's high-water extent (it never shrinks)",
            Allocator::Pytorch => {
                "segments held from cudaMalloc, in use or cached (torch.cuda.memory_reserved, \
                 modeled)"
            }
            Allocator::PytorchExpandable => {
                "pages mapped into the expandable segments, in use or cached (modeled)"
            }
            _ => "live bytes: every request is its own device allocation",
        }
    }

    /// What the row's "storage calls" count.
    pub fn storage_calls_mean(self, arenas: bool) -> &'static str {
        match self {
            _ if self.is_gpumem() && arenas => {
                "device allocations and frees (the arena's range, persistent pages) \
                 plus chunk creates, maps, unmaps and releases"
            }
            _ if self.is_gpumem() => "device allocations and frees of pages",
            Allocator::OffsetAllocator => "one: its heap, allocated up front",
            Allocator::Pytorch => "cudaMalloc and cudaFree of segments (modeled)",
            Allocator::PytorchExpandable => {
                "pages created and mapped, unmapped and released (modeled)"
            }
            _ => "one device allocation per request and one free per free",
        }
    }
}

/// The allocator `word` names: a row name or, for paged rows, any word
/// the facade's layout grammar reads as that layout (`sub-slices`,
/// `exclusive_pages`); case does not matter.
fn named(word: &str) -> Option<Allocator> {
    let lower = word.to_ascii_lowercase();
    if let Some(&allocator) = ALL.iter().find(|a| a.name() == lower) {
        return Some(allocator);
    }
    match lower.as_str() {
        "offset" => return Some(Allocator::OffsetAllocator),
        "pytorch_expandable" | "pytorch-expandable-segments" => {
            return Some(Allocator::PytorchExpandable);
        }
        _ => {}
    }
    let layout = parse_layout(&lower).ok()?;
    ALL.into_iter().find(|a| a.layout() == Some(layout.clone()))
}

/// The allocators `--against` names, in the order given, each once.
///
/// # Errors
/// An empty list or a name that is none of [`ALL`], with the valid names.
pub fn parse_against(list: &str) -> Result<Vec<Allocator>> {
    let valid = ALL.map(Allocator::name).join(", ");
    let refuse = |reason: String| ReplayError::UnknownAllocator {
        given: list.to_string(),
        reason,
        valid: valid.clone(),
    };
    let mut chosen = Vec::new();
    for word in list.split(',').map(str::trim) {
        if word.is_empty() {
            return Err(refuse("the list has an empty name".to_string()));
        }
        let allocator = named(word).ok_or_else(|| refuse(format!("`{word}` is not one")))?;
        if !chosen.contains(&allocator) {
            chosen.push(allocator);
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_name_parses_back_to_its_allocator() {
        for allocator in ALL {
            assert_eq!(parse_against(allocator.name()).unwrap(), vec![allocator]);
        }
    }

    #[test]
    fn layout_aliases_and_case_name_the_paged_rows_and_duplicates_collapse() {
        let chosen = parse_against("Sub-Slices, exclusive_pages,SYSTEM,sub_slices").unwrap();
        assert_eq!(
            chosen,
            vec![
                Allocator::SubSlices,
                Allocator::Exclusive,
                Allocator::System
            ]
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_valid_name() {
        let err = parse_against("gpumem,jemalloc").unwrap_err();
        assert!(
            matches!(err, ReplayError::UnknownAllocator { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("`jemalloc`"), "{text}");
        for allocator in ALL {
            assert!(text.contains(allocator.name()), "{text}");
        }
        assert!(parse_against("gpumem,,system").is_err());
        assert!(parse_against("").is_err());
    }
}
