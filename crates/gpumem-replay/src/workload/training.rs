//! `training`: a transformer training loop (GPT-style, 24 layers, hidden
//! 2048, ≈1.3 B parameters, bf16 with fp32 master weights and Adam).
//!
//! - Weights, master weights and both Adam moments are allocated once inside
//!   a persistent-mode window (≈18 GiB).
//! - Each step picks a sequence length (dynamic shapes: 1024, 1536 or 2048
//!   tokens × micro-batch 8). Forward allocates each layer's saved
//!   activations and short-lived temporaries; the LM head allocates logits
//!   and the fp32 softmax buffer (the step's largest tensors).
//! - Backward walks the layers in reverse: gradient buffers for each
//!   parameter appear (PyTorch's `set_to_none` gradients), activation
//!   gradients are temporaries, and each saved activation is freed once used.
//! - The optimizer step frees every gradient buffer.
//!
//! Peak live is ≈45–50 GiB; default 40 steps ≈ 50 k events.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::{Mode, Trace};

/// Training steps at scale 1.
pub const TRAINING_STEPS: u64 = 40;
const LAYERS: usize = 24;
const HIDDEN: u64 = 2048;
const FFN: u64 = 4 * HIDDEN;
const VOCAB: u64 = 50_304;
const HEADS: u64 = 16;
const MICRO_BATCH: u64 = 8;
const SEQ_LENS: [u64; 3] = [1024, 1536, 2048];
const BF16: u64 = 2;
const FP32: u64 = 4;

/// Parameter element counts of one layer: qkv, out, ffn up, ffn down, two norms.
const LAYER_PARAMS: [u64; 6] = [
    HIDDEN * 3 * HIDDEN,
    HIDDEN * HIDDEN,
    HIDDEN * FFN,
    FFN * HIDDEN,
    2 * HIDDEN,
    2 * HIDDEN,
];

fn parameter_counts() -> Vec<u64> {
    let mut counts = vec![VOCAB * HIDDEN];
    for _ in 0..LAYERS {
        counts.extend_from_slice(&LAYER_PARAMS);
    }
    counts.push(2 * HIDDEN);
    counts
}

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut rec = Recorder::new();
    let params = parameter_counts();

    rec.mode(Mode::Persistent);
    for &n in &params {
        rec.tag("weights");
        rec.alloc(n * BF16); // weight
        rec.tag("master weights");
        rec.alloc(n * FP32); // master copy
        rec.tag("optimizer state");
        rec.alloc(n * FP32); // Adam first moment
        rec.alloc(n * FP32); // Adam second moment
    }
    rec.mode(Mode::Auto);

    for _ in 0..spec.scaled(TRAINING_STEPS) {
        let tokens = MICRO_BATCH * SEQ_LENS[rng.random_range(0..SEQ_LENS.len())];
        let act = |width: u64| tokens * width * BF16;
        let temp = |rec: &mut Recorder, size: u64| {
            rec.tag("temporaries");
            let id = rec.alloc(size);
            rec.free(id);
            rec.tag("activations");
        };

        // Forward.
        rec.tag("activations");
        let embedded = rec.alloc(act(HIDDEN));
        let mut saved: Vec<Vec<u64>> = Vec::with_capacity(LAYERS);
        for _ in 0..LAYERS {
            let mut layer = vec![
                rec.alloc(act(HIDDEN)),           // ln1 output
                rec.alloc(act(3 * HIDDEN)),       // qkv
                rec.alloc(act(HIDDEN)),           // attention output
                rec.alloc(tokens * HEADS * FP32), // softmax log-sum-exp
            ];
            temp(&mut rec, act(HIDDEN)); // projection before the residual add
            layer.push(rec.alloc(act(HIDDEN))); // residual
            layer.push(rec.alloc(act(HIDDEN))); // ln2 output
            layer.push(rec.alloc(act(FFN))); // ffn up
            layer.push(rec.alloc(act(FFN))); // gelu
            temp(&mut rec, act(HIDDEN)); // ffn down before the residual add
            layer.push(rec.alloc(act(HIDDEN))); // residual
            saved.push(layer);
        }
        rec.tag("logits");
        let logits = rec.alloc(tokens * VOCAB * BF16);
        let softmax = rec.alloc(tokens * VOCAB * FP32);
        temp(&mut rec, tokens * FP32); // per-token loss

        // Backward.
        rec.tag("logits");
        let grad_logits = rec.alloc(tokens * VOCAB * BF16);
        rec.free(softmax);
        rec.free(logits);
        rec.tag("gradients");
        let mut grads = vec![rec.alloc(2 * HIDDEN * BF16)]; // final norm
        grads.push(rec.alloc(VOCAB * HIDDEN * BF16)); // tied embedding / head
        rec.tag("activation gradients");
        let mut grad_hidden = rec.alloc(act(HIDDEN));
        rec.free(grad_logits);
        while let Some(layer) = saved.pop() {
            rec.tag("gradients");
            for &n in LAYER_PARAMS.iter().rev() {
                grads.push(rec.alloc(n * BF16));
            }
            temp(&mut rec, act(FFN)); // d gelu
            temp(&mut rec, act(FFN)); // d ffn up
            temp(&mut rec, act(3 * HIDDEN)); // d qkv
            temp(&mut rec, tokens * HEADS * FP32); // d softmax stats
            for id in layer.into_iter().rev() {
                rec.free(id);
            }
            rec.tag("activation gradients");
            let next = rec.alloc(act(HIDDEN));
            rec.free(grad_hidden);
            grad_hidden = next;
        }
        rec.free(grad_hidden);
        rec.free(embedded);

        // Optimizer: global grad norm scratch, then gradients are set to None.
        temp(&mut rec, params.len() as u64 * FP32);
        rec.free_all(grads);
    }
    rec.finish()
}
