//! `GPUMEM_CONF`: configuration from the environment, PyTorch style.
//!
//! The variable holds `key:value` items separated by commas, like
//! `PYTORCH_CUDA_ALLOC_CONF`: `GPUMEM_CONF=budget:8GiB,pools:sliced,poison:on`.
//! Each key overrides that one setting of the configuration the code built;
//! keys not named keep the code's value. Parsing is a pure function
//! ([`GpumemConfig::apply_conf`]) of the text and a configuration: it reads
//! no environment and it changes nothing unless every item is valid.
//! Unknown keys, bad values, duplicates and items without a colon are errors
//! that name what is valid — a typo must never be silently ignored, since
//! the setting the user meant would then silently not apply.

use super::conf_items::items;
pub use super::conf_keys::CONF_KEYS;
use super::conf_values::{
    bad, parse_bool, parse_budget, parse_driver_costs, parse_idle_share, parse_poison, parse_share,
    parse_size, valid_keys,
};
use super::layout::parse_layout;
use super::{GpumemConfig, PoolLayout};
use crate::error::{GpuMemError, Result};

/// The environment variable read by [`GpumemConfig::from_env`].
pub const CONF_VAR: &str = "GPUMEM_CONF";

impl GpumemConfig {
    /// This configuration with the items of a `GPUMEM_CONF` string applied.
    ///
    /// Pure: reads no environment. On error `self` is unchanged.
    ///
    /// # Errors
    /// [`GpuMemError::UnknownConfKey`] (listing the valid keys),
    /// [`GpuMemError::BadConfValue`] (saying what the key accepts),
    /// [`GpuMemError::MalformedConf`], [`GpuMemError::DuplicateConfKey`], and
    /// [`GpuMemError::ConfNotApplicable`] for `page_size`/`max_slice` with a
    /// layout other than `sliced`.
    pub fn apply_conf(&mut self, text: &str) -> Result<()> {
        let mut next = self.clone();
        let mut seen: Vec<&'static str> = Vec::new();
        let (mut page_size, mut max_slice) = (None, None);
        let mut rdma = None;
        for item in items(text) {
            let item = item.as_str();
            let Some((key, value)) = item.split_once(':') else {
                return Err(GpuMemError::MalformedConf { item: item.into() });
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(&(key, _, _)) = CONF_KEYS.iter().find(|(k, _, _)| *k == key) else {
                return Err(GpuMemError::UnknownConfKey {
                    key: key.into(),
                    valid: valid_keys(),
                });
            };
            if seen.contains(&key) {
                return Err(GpuMemError::DuplicateConfKey { key });
            }
            seen.push(key);
            match key {
                "pools" => {
                    next.pools = parse_layout(value)
                        .map_err(|source| GpuMemError::BadConfLayout { source })?;
                }
                "page_size" => page_size = Some(parse_size(key, value)?),
                "max_slice" => max_slice = Some(parse_size(key, value)?),
                "max_page" => next.max_page_size = Some(parse_size(key, value)?),
                "budget" => next.budget = parse_budget(value)?,
                "streams" => {
                    next.streams = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=1024).contains(n))
                        .ok_or_else(|| bad(key, value))?
                }
                "lazy_pages" => next.lazy_pages = parse_bool(key, value)?,
                "arena_max_chunk" => next.arena_max_chunk = Some(parse_size(key, value)?),
                "arena_idle_share" => next.arena_idle_share = Some(parse_idle_share(value)?),
                "poison" => next.poison = parse_poison(value)?,
                "relocate" => {
                    next.auto_relocate = match value.to_ascii_lowercase().as_str() {
                        "auto" => true,
                        "manual" => false,
                        _ => return Err(bad(key, value)),
                    }
                }
                "driver_cost" => next.driver_costs = parse_driver_costs(value)?,
                "share" => next.share = parse_share(value)?,
                "share_rdma" => rdma = Some((parse_bool(key, value)?, value.to_string())),
                _ => next.bypass_caching = parse_bool(key, value)?,
            }
        }
        if let Some((rdma, value)) = rdma {
            match &mut next.share {
                Some(share) => share.rdma = rdma,
                None if rdma => return Err(bad("share_rdma", &value)),
                None => {}
            }
        }
        if page_size.is_some() || max_slice.is_some() {
            let PoolLayout::Sliced {
                page_size: page,
                max_slice: slice,
            } = &mut next.pools
            else {
                return Err(GpuMemError::ConfNotApplicable {
                    key: if page_size.is_some() {
                        "page_size"
                    } else {
                        "max_slice"
                    },
                    layout: next.pools.name(),
                });
            };
            *page = page_size.unwrap_or(*page);
            *slice = max_slice.unwrap_or(*slice);
        }
        *self = next;
        Ok(())
    }

    /// The default configuration with a `GPUMEM_CONF` string applied.
    pub fn from_conf(text: &str) -> Result<Self> {
        let mut config = Self::default();
        config.apply_conf(text)?;
        Ok(config)
    }

    /// This configuration with the `GPUMEM_CONF` environment variable applied
    /// (unchanged when it is not set).
    pub fn with_env(mut self) -> Result<Self> {
        match std::env::var(CONF_VAR) {
            Ok(text) => self.apply_conf(&text).map(|()| self),
            Err(std::env::VarError::NotPresent) => Ok(self),
            Err(std::env::VarError::NotUnicode(_)) => Err(GpuMemError::ConfNotUnicode),
        }
    }

    /// The default configuration with `GPUMEM_CONF` applied.
    pub fn from_env() -> Result<Self> {
        Self::default().with_env()
    }
}
