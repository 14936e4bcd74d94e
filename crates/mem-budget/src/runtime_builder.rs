//! Assembling a device's resource stack, once for every user: budget →
//! logging → layers → backend. [`DeviceRuntimeBuilder::build`] puts a
//! [`DeviceRuntime`] on it; [`DeviceRuntimeBuilder::build_stack`] hands the
//! stack itself to callers with their own storage (the gpumem facade, the
//! reliability suite's test device).

use std::sync::Arc;

use mem_storage::{DeviceResource, LoggingResource, StreamId};

use crate::budget::MemoryBudget;
use crate::device::BudgetDevice;
use crate::global::GlobalDeviceBudget;
use crate::runtime::{DeviceRuntime, Layer, RuntimeLog};

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

    /// Assemble the stack and the runtime over it.
    pub fn build(self) -> DeviceRuntime {
        let (device, stream, defer_frees) = (self.device.clone(), self.stream, self.defer_frees);
        let stack = self.build_stack();
        let global = stack.budget.map(|budget| budget.handle());
        DeviceRuntime::assemble(device, stack.top, global, stack.log, stream, defer_frees)
    }

    /// Assemble only the resource stack, for a caller that puts its own
    /// storage on it (the facade's streams, a test device): the device's
    /// backend → the layers (first added lowest) → logging when asked for →
    /// the global budget when asked for.
    pub fn build_stack(self) -> ResourceStack {
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
        let budget = self
            .global
            .map(|budget| Arc::new(GlobalDeviceBudget::new(stack.clone(), budget)));
        if let Some(budget) = &budget {
            stack = Arc::clone(budget) as Arc<dyn DeviceResource>;
        }
        ResourceStack {
            top: stack,
            budget,
            log,
        }
    }
}

/// A device's resource stack, built by [`DeviceRuntimeBuilder::build_stack`].
pub struct ResourceStack {
    /// The top of the stack: what every allocation goes through.
    pub top: Arc<dyn DeviceResource>,
    /// The global budget at the top, when one was asked for: the same
    /// object as `top`, typed (its handle; charging virtual memory to it).
    pub budget: Option<Arc<GlobalDeviceBudget<Arc<dyn DeviceResource>>>>,
    /// The logging layer, when asked for.
    pub log: Option<Arc<RuntimeLog>>,
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
