//! Splitting a `GPUMEM_CONF` string into its `key:value` items.

use super::layout::POOL_KINDS;

/// The items of a `GPUMEM_CONF` string, with a `pools:` list kept whole:
/// the items after `pools:` that are pools of a list (`sliced:…`,
/// `exclusive:…`, `arena:…`; no key has those names) belong to its value,
/// so `pools:` takes every layout `gpumem replay --config` does. Likewise
/// the `key=latency` entries after `driver_cost:` (no colon, an `=`)
/// belong to it.
pub(super) fn items(text: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let (mut in_pools, mut in_costs) = (false, false);
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let key = item
            .split_once(':')
            .map(|(k, _)| k.trim().to_ascii_lowercase());
        let pool = key.as_deref().is_some_and(|k| POOL_KINDS.contains(&k));
        let cost_entry = key.is_none() && item.contains('=');
        match items.last_mut() {
            Some(last) if (in_pools && pool) || (in_costs && cost_entry) => {
                last.push(',');
                last.push_str(item);
            }
            _ => {
                in_pools = key.as_deref() == Some("pools");
                in_costs = key.as_deref() == Some("driver_cost");
                items.push(item.to_string());
            }
        }
    }
    items
}
