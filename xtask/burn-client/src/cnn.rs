//! A small CNN on MNIST-shaped generated images, trained with Adam on the
//! wgpu device's autodiff form, batches of a fixed size.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::data::{Rng, images};
use crate::report::Report;

const BATCH: usize = 32;

#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    fc1: Linear,
    fc2: Linear,
    relu: Relu,
}

impl Cnn {
    pub fn new(device: &Device) -> Self {
        Self {
            conv1: Conv2dConfig::new([1, 8], [3, 3]).init(device),
            conv2: Conv2dConfig::new([8, 16], [3, 3]).init(device),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            fc1: LinearConfig::new(16 * 5 * 5, 64).init(device),
            fc2: LinearConfig::new(64, 10).init(device),
            relu: Relu::new(),
        }
    }

    /// `[batch, 1, 28, 28]` → logits `[batch, 10]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let x = self.pool.forward(self.relu.forward(self.conv1.forward(x)));
        let x = self.pool.forward(self.relu.forward(self.conv2.forward(x)));
        let x: Tensor<2> = x.flatten(1, 3);
        self.fc2.forward(self.relu.forward(self.fc1.forward(x)))
    }
}

/// Trains for `steps` steps; one loss per step in `report`.
pub fn train(device: &Device, steps: usize, report: &mut Report) -> Cnn {
    let device = device.clone().autodiff();
    device.seed(7);
    let mut model = Cnn::new(&device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut rng = Rng::new(11);
    for step in 0..steps {
        let (pixels, labels) = images(&mut rng, BATCH);
        let x = Tensor::<4>::from_data(TensorData::new(pixels, [BATCH, 1, 28, 28]), &device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [BATCH]), &device);
        let loss = loss_fn.forward(model.forward(x), y);
        report.loss(step, &loss);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    model
}
