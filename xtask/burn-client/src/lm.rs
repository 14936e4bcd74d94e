//! A small decoder-only transformer language model on a generated token
//! stream: trained with Adam on sequences whose length and batch size change
//! every step (the pattern that fragments memory), and run for inference
//! (no autodiff) on batches whose size changes every step.

use burn::module::Module;
use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::data::{Rng, tokens};
use crate::report::Report;

const VOCAB: usize = 64;
const MAX_LEN: usize = 64;

#[derive(Module, Debug)]
pub struct Lm {
    tok: Embedding,
    pos: Embedding,
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
            tok: EmbeddingConfig::new(VOCAB, 64).init(device),
            pos: EmbeddingConfig::new(MAX_LEN, 64).init(device),
            blocks: blocks.init(device),
            norm: LayerNormConfig::new(64).init(device),
            head: LinearConfig::new(64, VOCAB).init(device),
        }
    }

    /// Tokens `[batch, len]` → logits `[batch, len, VOCAB]`, each position
    /// seeing only itself and what comes before it.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let device = tokens.device();
        let [batch, len] = tokens.dims();
        let positions = Tensor::<1, Int>::arange(0..len as i64, &device)
            .reshape([1, len])
            .repeat_dim(0, batch);
        let x = self.tok.forward(tokens) + self.pos.forward(positions);
        let mask = generate_autoregressive_mask(batch, len, &device);
        let x = self
            .blocks
            .forward(TransformerEncoderInput::new(x).mask_attn(mask));
        self.head.forward(self.norm.forward(x))
    }
}

/// The next-token loss of `model` on `batch` sequences of `len` tokens.
fn loss(
    model: &Lm,
    loss_fn: &CrossEntropyLoss,
    seqs: Vec<i64>,
    batch: usize,
    len: usize,
    device: &Device,
) -> (Tensor<1>, Tensor<3>) {
    let all = Tensor::<2, Int>::from_data(TensorData::new(seqs, [batch, len + 1]), device);
    let input = all.clone().slice([0..batch, 0..len]);
    let target = all.slice([0..batch, 1..len + 1]).reshape([batch * len]);
    let logits = model.forward(input);
    let flat = logits.clone().reshape([batch * len, VOCAB]);
    (loss_fn.forward(flat, target), logits)
}

/// The shape of training step `step`: lengths and batch sizes that change
/// every step, in an order that is not a cycle of a few shapes.
pub fn train_shape(step: usize) -> (usize, usize) {
    const LENS: [usize; 7] = [12, 40, 24, 63, 8, 50, 31];
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
        let (loss, _) = loss(&model, &loss_fn, seqs, batch, len, &device);
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
        let (loss, logits) = loss(&model, &loss_fn, seqs, batch, LEN, device);
        report.loss(step, &loss);
        report.output(&logits);
    }
    model
}
