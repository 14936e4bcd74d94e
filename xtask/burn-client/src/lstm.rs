//! A two-layer LSTM regressing the next value of noisy sine waves, trained
//! with Adam on sequences whose length and batch size change every step.
//!
//! Its allocation rhythm differs from the transformer's: the sequence is
//! unrolled one timestep at a time, so a step makes a few thousand small
//! tensors (gates and states of `batch × 128` floats or less) that autodiff
//! keeps until the backward pass, and the length sets how many.
//!
//! The cell is written here rather than taken from `nn::Lstm`, in the shape
//! of Burn's `modern-lstm` example: one linear layer for the four gates of
//! the input and one for those of the hidden state, the input's gates
//! layer-normalised. No dropout, so nothing but the seed decides a result.

use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor, TensorData};

use crate::data::{Rng, waves};
use crate::report::Report;

const HIDDEN: usize = 32;
const LAYERS: usize = 2;

#[derive(Module, Debug)]
pub struct Cell {
    /// The input's contribution to the four gates (input, forget, cell,
    /// output), `d_input → 4 × HIDDEN`.
    input: Linear,
    /// The previous hidden state's, `HIDDEN → 4 × HIDDEN`, bias-free (the
    /// input's bias serves both).
    hidden: Linear,
    norm: LayerNorm,
}

impl Cell {
    fn new(d_input: usize, device: &Device) -> Self {
        Self {
            input: LinearConfig::new(d_input, 4 * HIDDEN).init(device),
            hidden: LinearConfig::new(HIDDEN, 4 * HIDDEN)
                .with_bias(false)
                .init(device),
            norm: LayerNormConfig::new(4 * HIDDEN).init(device),
        }
    }

    /// One timestep: `x` is `[batch, d_input]`, the state `(hidden, cell)`
    /// is `[batch, HIDDEN]` each; returns the next state.
    fn forward(&self, x: Tensor<2>, state: (Tensor<2>, Tensor<2>)) -> (Tensor<2>, Tensor<2>) {
        let (hidden, cell) = state;
        let gates = self.norm.forward(self.input.forward(x)) + self.hidden.forward(hidden);
        let mut gates = gates.chunk(4, 1).into_iter();
        let mut gate = || gates.next().expect("4 × HIDDEN splits into four gates");
        let (input, forget, candidate, output) = (gate(), gate(), gate(), gate());
        let cell = sigmoid(forget) * cell + sigmoid(input) * candidate.tanh();
        let hidden = sigmoid(output) * cell.clone().tanh();
        (hidden, cell)
    }
}

#[derive(Module, Debug)]
pub struct Net {
    cells: Vec<Cell>,
    head: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Self {
        let cells = (0..LAYERS)
            .map(|layer| Cell::new(if layer == 0 { 1 } else { HIDDEN }, device))
            .collect();
        Self {
            cells,
            head: LinearConfig::new(HIDDEN, 1).init(device),
        }
    }

    /// `[batch, len, 1]` → the prediction after the last timestep,
    /// `[batch, 1]`, from zero states.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<2> {
        let device = x.device();
        let [batch, _, _] = x.dims();
        let zeros = || Tensor::<2>::zeros([batch, HIDDEN], &device);
        let mut states: Vec<_> = self.cells.iter().map(|_| (zeros(), zeros())).collect();
        for x_t in x.iter_dim(1) {
            let mut input = x_t.squeeze_dim::<2>(1);
            for (cell, state) in self.cells.iter().zip(states.iter_mut()) {
                let (hidden, c) = cell.forward(input, state.clone());
                input = hidden.clone();
                *state = (hidden, c);
            }
        }
        let top = states.pop().expect("at least one layer").0;
        self.head.forward(top)
    }
}

/// The shape of training step `step`: lengths and batch sizes that change
/// every step, cycled independently, so 35 steps see each pair once.
pub fn train_shape(step: usize) -> (usize, usize) {
    const LENS: [usize; 7] = [12, 40, 7, 28, 19, 33, 9];
    const BATCHES: [usize; 5] = [16, 5, 32, 9, 24];
    (BATCHES[step % BATCHES.len()], LENS[step % LENS.len()])
}

/// Trains for `steps` steps of [`train_shape`]; one loss per step.
pub fn train(device: &Device, steps: usize, report: &mut Report) -> Net {
    let device = device.clone().autodiff();
    device.seed(31);
    let mut model = Net::new(&device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = MseLoss::new();
    let mut rng = Rng::new(37);
    for step in 0..steps {
        let (batch, len) = train_shape(step);
        let (values, targets) = waves(&mut rng, batch, len);
        let x = Tensor::<3>::from_data(TensorData::new(values, [batch, len, 1]), &device);
        let target = Tensor::<2>::from_data(TensorData::new(targets, [batch, 1]), &device);
        let loss = loss_fn.forward(model.forward(x), target, Reduction::Mean);
        report.loss(step, &loss);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(5e-3, model, grads);
    }
    model
}
