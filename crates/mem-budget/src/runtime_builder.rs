//! Assembling a [`DeviceRuntime`]'s stack: budget → logging → layers → backend.

use std::sync::Arc;

use mem_storage::{DeviceResource, LoggingResource, StreamId};

use crate::budget::MemoryBudget;
use crate::device::BudgetDevice;
use crate::global::GlobalDeviceBudget;
use crate::runtime::{DeviceRuntime, Layer};

/// Builds a [`DeviceRuntime`]: budget → layers → backend.
pub struct DeviceRuntimeBuilder {
    device: BudgetDevice,
    global: Option<MemoryBudget>,
    layers: Vec<Layer>,
    logging: bool,
    stream: StreamId,
    defer_frees: bool,
}

impl DeviceRuntimeBuilder {
    /// Cap the device at `budget` with a fresh [`GlobalDeviceBudget`] on top.
    pub fn global_budget(mut self, budget: MemoryBudget) -> Self {
        self.global = Some(budget);
        self
    }

    /// Add a middle layer; the first added sits directly above the backend.
    /// Use it for mem-storage's logging or statistics adaptors.
    pub fn layer(
        mut self,
        wrap: impl FnOnce(Arc<dyn DeviceResource>) -> Arc<dyn DeviceResource> + 'static,
    ) -> Self {
        self.layers.push(Box::new(wrap));
        self
    }

    /// Put mem-storage's [`LoggingResource`] above the layers, recording
    /// every allocate and free as a replayable event ([`DeviceRuntime::log`]).
    /// The log grows until drained.
    pub fn logging(mut self) -> Self {
        self.logging = true;
        self
    }

    /// Allocate and free on `stream` instead of the default stream.
    pub fn stream(mut self, stream: StreamId) -> Self {
        self.stream = stream;
        self
    }

    /// Queue frees until [`DeviceRuntime::reap_pending_deallocations`].
    pub fn defer_frees(mut self) -> Self {
        self.defer_frees = true;
        self
    }

    /// Assemble the stack.
    pub fn build(self) -> DeviceRuntime {
        let mut stack = Arc::clone(self.device.resource());
        for layer in self.layers {
            stack = layer(stack);
        }
        let log = if self.logging {
            let log = Arc::new(LoggingResource::new(stack));
            stack = Arc::clone(&log) as Arc<dyn DeviceResource>;
            Some(log)
        } else {
            None
        };
        let (stack, global): (Arc<dyn DeviceResource>, _) = match self.global {
            Some(budget) => {
                let capped = GlobalDeviceBudget::new(stack, budget);
                let handle = capped.handle();
                (Arc::new(capped), Some(handle))
            }
            None => (stack, None),
        };
        DeviceRuntime::assemble(
            self.device,
            stack,
            global,
            log,
            self.stream,
            self.defer_frees,
        )
    }
}

impl DeviceRuntime {
    /// The standard stack: [`GlobalDeviceBudget`] capped at `budget` →
    /// [`LoggingResource`] → `device`'s backend, freeing immediately on the
    /// default stream.
    pub fn standard(device: BudgetDevice, budget: MemoryBudget) -> Self {
        Self::builder(device)
            .global_budget(budget)
            .logging()
            .build()
    }

    /// Start a stack on `device`'s backend resource.
    pub fn builder(device: BudgetDevice) -> DeviceRuntimeBuilder {
        DeviceRuntimeBuilder {
            device,
            global: None,
            layers: Vec::new(),
            logging: false,
            stream: StreamId::DEFAULT,
            defer_frees: false,
        }
    }
}
