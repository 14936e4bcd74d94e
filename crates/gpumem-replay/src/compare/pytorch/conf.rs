//! `--pytorch-conf`: the `PYTORCH_CUDA_ALLOC_CONF` settings the modeled
//! rows take, in PyTorch's own syntax (`max_split_size_mb:128,
//! roundup_power2_divisions:4`), checked as PyTorch checks them.

use gpumem::storage::units::MIB;

use super::policy::{LARGE_BUFFER, Policy};
use crate::error::{ReplayError, Result};

/// The keys `--pytorch-conf` takes, for error messages.
pub const PYTORCH_CONF_KEYS: &str = "max_split_size_mb:N (above 20), roundup_power2_divisions:N \
     (a power of two, 0 or 1 for off)";

/// The policy `text` sets over PyTorch's defaults (not expandable: each
/// row sets that).
///
/// # Errors
/// [`ReplayError::InvalidArgument`] for an unknown key, a value that is not
/// a whole number, or one PyTorch refuses.
pub fn parse_pytorch_conf(text: &str) -> Result<Policy> {
    let refuse = |reason: String| ReplayError::InvalidArgument {
        option: "--pytorch-conf",
        value: text.to_string(),
        reason,
    };
    let mut policy = Policy::default();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once(':') else {
            return Err(refuse(format!(
                "`{item}` is not key:value; the keys are {PYTORCH_CONF_KEYS}"
            )));
        };
        let key = key.trim();
        if key == "expandable_segments" {
            return Err(refuse(
                "expandable_segments is what tells the pytorch and pytorch-expandable rows \
                 apart; choose rows with --against"
                    .to_string(),
            ));
        }
        if !["max_split_size_mb", "roundup_power2_divisions"].contains(&key) {
            return Err(refuse(format!(
                "`{key}` is not modeled; the keys are {PYTORCH_CONF_KEYS}"
            )));
        }
        let number = value.trim().parse::<u64>().map_err(|_| {
            refuse(format!(
                "`{key}` takes a whole number, not `{}`",
                value.trim()
            ))
        })?;
        match key {
            "max_split_size_mb" => {
                if number <= LARGE_BUFFER / MIB {
                    return Err(refuse(format!(
                        "max_split_size_mb {number} is too small: PyTorch requires more than {}",
                        LARGE_BUFFER / MIB
                    )));
                }
                policy.max_split_size = number.saturating_mul(MIB);
            }
            _ => {
                if number > 1 && !number.is_power_of_two() {
                    return Err(refuse(format!(
                        "roundup_power2_divisions {number} is not a power of two"
                    )));
                }
                policy.roundup_power2_divisions = number;
            }
        }
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_knobs_parse_in_pytorchs_syntax() {
        let policy =
            parse_pytorch_conf("max_split_size_mb:128, roundup_power2_divisions:4").unwrap();
        assert_eq!(policy.max_split_size, 128 * MIB);
        assert_eq!(policy.roundup_power2_divisions, 4);
        assert!(!policy.expandable);
        assert_eq!(parse_pytorch_conf("").unwrap(), Policy::default());
    }

    #[test]
    fn values_pytorch_refuses_are_refused_with_the_reason() {
        for (text, needle) in [
            ("max_split_size_mb:20", "more than 20"),
            ("roundup_power2_divisions:3", "not a power of two"),
            ("max_split_size_mb:lots", "whole number"),
            ("garbage_collection_threshold:0.6", "not modeled"),
            ("expandable_segments:True", "--against"),
            ("max_split_size_mb", "key:value"),
        ] {
            let err = parse_pytorch_conf(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
