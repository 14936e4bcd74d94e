//! A small decoder-only transformer language model on a generated token
//! stream: trained with Adam on sequences whose length and batch size change
//! every step (the pattern that fragments memory), and run for inference
//! (no autodiff) on batches whose size changes every step.
//!
//! The embeddings are bias-free linear layers over one-hot inputs made on
//! the host, not `nn::Embedding`: its backward adds rows with atomics
//! (`select_assign`), in an order that changes between runs on lavapipe
//! (CubeCL's own engine gave 1–2 ulp different losses run to run), and the
//! oracle wants bit-identical losses. A matmul's backward is deterministic.

use burn::module::Module;
use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::data::{Rng, tokens};
use crate::report::Report;

const VOCAB: usize = 64;
const MAX_LEN: usize = 128;

#[derive(Module, Debug)]
pub struct Lm {
    tok: Linear,
    pos: Linear,
    blocks: TransformerEncoder,
    norm: LayerNorm,
    head: Linear,
}

impl Lm {
    /// Two pre-norm blocks of width 64, four heads, no dropout (so nothing
    /// but the seed decides a result).
    pub fn new(device: &Device) -> Self {
        let blocks = TransformerEncoderConfig::new(64, 128, 4, 2)
            .with_dropout(0.0)
            .with_norm_first(true);
        Self {
            tok: LinearConfig::new(VOCAB, 64).with_bias(false).init(device),
            pos: LinearConfig::new(MAX_LEN, 64).with_bias(false).init(device),
            blocks: blocks.init(device),
            norm: LayerNormConfig::new(64).init(device),
            head: LinearConfig::new(64, VOCAB).init(device),
        }
    }

    /// One-hot tokens `[batch, len, VOCAB]` → logits `[batch, len, VOCAB]`,
    /// each position seeing only itself and what comes before it.
    pub fn forward(&self, tokens: Tensor<3>) -> Tensor<3> {
        let device = tokens.device();
        let [batch, len, _] = tokens.dims();
        let positions =
            Tensor::<2>::from_data(one_hot(&positions(len), MAX_LEN, [len, MAX_LEN]), &device);
        let x = self.tok.forward(tokens) + self.pos.forward(positions).unsqueeze::<3>();
        let mask = generate_autoregressive_mask(batch, len, &device);
        let x = self
            .blocks
            .forward(TransformerEncoderInput::new(x).mask_attn(mask));
        self.head.forward(self.norm.forward(x))
    }
}

fn positions(len: usize) -> Vec<i64> {
    (0..len as i64).collect()
}

/// `ids` one-hot over `classes`, shaped `shape`.
fn one_hot<const D: usize>(ids: &[i64], classes: usize, shape: [usize; D]) -> TensorData {
    let mut values = vec![0.0f32; ids.len() * classes];
    for (i, &id) in ids.iter().enumerate() {
        values[i * classes + id as usize] = 1.0;
    }
    TensorData::new(values, shape)
}

/// The next-token loss of `model` on `batch` sequences of `len + 1` tokens
/// (`seqs`), and the logits.
fn loss(
    model: &Lm,
    loss_fn: &CrossEntropyLoss,
    seqs: &[i64],
    batch: usize,
    len: usize,
    device: &Device,
) -> (Tensor<1>, Tensor<3>) {
    let rows = seqs.chunks(len + 1);
    let input: Vec<i64> = rows.clone().flat_map(|row| &row[..len]).copied().collect();
    let target: Vec<i64> = rows.flat_map(|row| &row[1..]).copied().collect();
    let input = Tensor::<3>::from_data(one_hot(&input, VOCAB, [batch, len, VOCAB]), device);
    let target = Tensor::<1, Int>::from_data(TensorData::new(target, [batch * len]), device);
    let logits = model.forward(input);
    let flat = logits.clone().reshape([batch * len, VOCAB]);
    (loss_fn.forward(flat, target), logits)
}

/// The shape of training step `step`: lengths and batch sizes that change
/// every step, in an order that is not a cycle of a few shapes.
pub fn train_shape(step: usize) -> (usize, usize) {
    const LENS: [usize; 7] = [24, 80, 48, 127, 16, 100, 62];
    const BATCHES: [usize; 5] = [8, 3, 16, 5, 11];
    (BATCHES[step % BATCHES.len()], LENS[step % LENS.len()])
}

/// Trains for `steps` steps of [`train_shape`]; one loss per step.
pub fn train(device: &Device, steps: usize, report: &mut Report) -> Lm {
    let device = device.clone().autodiff();
    device.seed(17);
    let mut model = Lm::new(&device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut rng = Rng::new(19);
    for step in 0..steps {
        let (batch, len) = train_shape(step);
        let seqs = tokens(&mut rng, batch, len, VOCAB);
        let (loss, _) = loss(&model, &loss_fn, &seqs, batch, len, &device);
        report.loss(step, &loss);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    model
}

/// Inference: `steps` forward passes of batches of a changing size, each of
/// 48 tokens; one loss per step, and every logit in the checksum.
pub fn infer(device: &Device, steps: usize, report: &mut Report) -> Lm {
    const BATCHES: [usize; 6] = [1, 12, 4, 24, 2, 9];
    const LEN: usize = 48;
    device.seed(23);
    let model = Lm::new(device);
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut rng = Rng::new(29);
    for step in 0..steps {
        let batch = BATCHES[step % BATCHES.len()];
        let seqs = tokens(&mut rng, batch, LEN, VOCAB);
        let (loss, logits) = loss(&model, &loss_fn, &seqs, batch, LEN, device);
        report.loss(step, &loss);
        report.output(&logits);
    }
    model
}
