//! What a run prints for `cargo xtask burn-client` to compare: every step's
//! loss as its bit pattern, a checksum of the final parameters (and, for
//! inference, of every output), and the time the steps took.

use std::time::Instant;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

use crate::data::{FNV_START, fnv};

pub struct Report {
    losses: Vec<f32>,
    /// When each step's loss was read back (the read waits for the step).
    done: Vec<Instant>,
    start: Instant,
    outputs: u64,
    params: u64,
}

impl Report {
    pub fn new() -> Self {
        Self {
            losses: Vec::new(),
            done: Vec::new(),
            start: Instant::now(),
            outputs: FNV_START,
            params: FNV_START,
        }
    }

    /// Step `step`'s loss (a one-element tensor), read back.
    pub fn loss(&mut self, step: usize, loss: &Tensor<1>) {
        assert_eq!(
            step,
            self.losses.len(),
            "losses come one per step, in order"
        );
        self.losses.push(loss.clone().into_scalar::<f32>());
        self.done.push(Instant::now());
    }

    /// Adds every element of `output` to the outputs' checksum.
    pub fn output<const D: usize>(&mut self, output: &Tensor<D>) {
        self.outputs = fnv(self.outputs, output.to_data().as_bytes());
    }

    /// The checksum of every float parameter of `module`, in visit order.
    pub fn params<M: Module>(&mut self, module: &M) {
        struct Hash(u64);
        impl ModuleVisitor for Hash {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                self.0 = fnv(self.0, param.val().to_data().as_bytes());
            }
        }
        let mut hash = Hash(FNV_START);
        module.visit(&mut hash);
        self.params = hash.0;
    }

    /// Prints the report: `loss STEP BITS VALUE` lines, then `key value`
    /// lines. Steps per second count the steps after the first third (the
    /// first steps compile the kernels).
    pub fn print(&self) {
        for (step, loss) in self.losses.iter().enumerate() {
            println!("loss {step} {:08x} {loss}", loss.to_bits());
        }
        let steps = self.losses.len();
        let warm = steps / 3;
        let from = if warm == 0 {
            self.start
        } else {
            self.done[warm - 1]
        };
        let secs = self
            .done
            .last()
            .map_or(0.0, |t| t.duration_since(from).as_secs_f64());
        let total = self
            .done
            .last()
            .map_or(0.0, |t| t.duration_since(self.start).as_secs_f64());
        println!("steps {steps}");
        println!("timed_steps {}", steps - warm);
        println!("timed_seconds {secs:.6}");
        println!("total_seconds {total:.6}");
        println!("params {:016x}", self.params);
        println!("outputs {:016x}", self.outputs);
    }
}
