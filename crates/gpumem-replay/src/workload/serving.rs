//! `serving`: LLM inference serving (7 B-class model, bf16, GQA) with
//! continuous batching — the fragmentation-heavy case.
//!
//! - Weights (≈13 GiB) are allocated once inside a persistent-mode window.
//! - Requests arrive at a rate that swings between quiet and busy phases, so
//!   the batch size varies (up to 64). A request's prompt (32–4096 tokens) is
//!   prefilled into one KV allocation sized to the prompt in 256-token chunks,
//!   with large short-lived prefill activations.
//! - Each decode step allocates batch-sized temporaries (hidden, MLP, fp32
//!   logits) and frees them; a request whose KV cache is full grows by one
//!   256-token chunk (32 MiB). A finished request (16–1024 new tokens) frees
//!   its whole KV cache, leaving holes of many sizes between live caches.
//!
//! New requests stop once the op target is reached; the batch then drains.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::{Mode, Trace};

/// Events (before the drain) at scale 1.
pub const SERVING_OPS: u64 = 100_000;
const LAYERS: u64 = 32;
const HIDDEN: u64 = 4096;
const KV_WIDTH: u64 = 1024;
const MLP: u64 = 11_008;
const VOCAB: u64 = 32_000;
const BF16: u64 = 2;
const FP32: u64 = 4;
/// KV bytes per token: K and V for every layer.
const KV_PER_TOKEN: u64 = 2 * LAYERS * KV_WIDTH * BF16;
const CHUNK_TOKENS: u64 = 256;
const MAX_BATCH: usize = 64;
/// Admission stops when live KV bytes would pass this.
const KV_BUDGET: u64 = 40 << 30;

#[derive(Debug)]
struct Request {
    kv: Vec<u64>,
    capacity: u64,
    tokens: u64,
    remaining: u64,
}

fn chunks(tokens: u64) -> u64 {
    tokens.div_ceil(CHUNK_TOKENS)
}

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut rec = Recorder::new();
    rec.mode(Mode::Persistent);
    rec.tag("weights");
    rec.alloc(VOCAB * HIDDEN * BF16); // embedding
    for _ in 0..LAYERS {
        for size in [
            HIDDEN * HIDDEN,
            HIDDEN * KV_WIDTH,
            HIDDEN * KV_WIDTH,
            HIDDEN * HIDDEN,
        ] {
            rec.alloc(size * BF16);
        }
        for _ in 0..3 {
            rec.alloc(HIDDEN * MLP * BF16);
        }
        rec.alloc(2 * HIDDEN * BF16);
    }
    rec.alloc(VOCAB * HIDDEN * BF16); // LM head
    rec.mode(Mode::Auto);

    let target = spec.scaled(SERVING_OPS);
    let mut batch: Vec<Request> = Vec::new();
    let mut kv_bytes = 0u64;
    let mut step = 0u64;
    let temp = |rec: &mut Recorder, size: u64, tag: &'static str| {
        rec.tag(tag);
        let id = rec.alloc(size);
        rec.free(id);
    };
    loop {
        let accepting = rec.ops() < target;
        if !accepting && batch.is_empty() {
            break;
        }
        step += 1;
        // Load swings between quiet and busy phases every few hundred steps.
        let busy = (step / 400) % 2 == 1;
        let arrivals = if !accepting {
            0
        } else if busy {
            rng.random_range(0..=3)
        } else {
            u32::from(rng.random_bool(0.15))
        };
        for _ in 0..arrivals {
            let prompt = rng.random_range(32..=4096u64);
            let need = chunks(prompt) * CHUNK_TOKENS * KV_PER_TOKEN;
            if batch.len() >= MAX_BATCH || kv_bytes + need > KV_BUDGET {
                break;
            }
            rec.tag("kv-cache");
            let kv = rec.alloc(need);
            kv_bytes += need;
            temp(&mut rec, prompt * 3 * HIDDEN * BF16, "prefill scratch"); // qkv of the prompt
            temp(&mut rec, prompt * 2 * MLP * BF16, "prefill scratch"); // gate and up
            batch.push(Request {
                kv: vec![kv],
                capacity: chunks(prompt) * CHUNK_TOKENS,
                tokens: prompt,
                remaining: rng.random_range(16..=1024),
            });
        }
        if batch.is_empty() {
            continue;
        }
        let b = batch.len() as u64;
        rec.tag("decode activations");
        let hidden = rec.alloc(b * HIDDEN * BF16);
        temp(&mut rec, b * 2 * MLP * BF16, "decode activations");
        rec.tag("logits");
        let logits = rec.alloc(b * VOCAB * FP32);
        temp(&mut rec, b * 8, "decode activations"); // sampled token ids
        rec.free(logits);
        rec.free(hidden);
        for req in batch.iter_mut() {
            req.tokens += 1;
            req.remaining -= 1;
            if req.tokens > req.capacity {
                let chunk = CHUNK_TOKENS * KV_PER_TOKEN;
                rec.tag("kv-cache");
                req.kv.push(rec.alloc(chunk));
                req.capacity += CHUNK_TOKENS;
                kv_bytes += chunk;
            }
        }
        let mut i = 0;
        while i < batch.len() {
            if batch[i].remaining == 0 {
                let done = batch.swap_remove(i);
                kv_bytes -= done.capacity * KV_PER_TOKEN;
                rec.free_all(done.kv);
            } else {
                i += 1;
            }
        }
    }
    rec.finish()
}
