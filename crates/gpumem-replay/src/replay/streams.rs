//! How a trace's streams map to a device's streams.

/// How trace streams map to `gpumem::Stream`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StreamMode {
    /// One device stream per trace stream, as CUDA runtimes keep one pool
    /// memory per stream.
    #[default]
    PerTrace,
    /// One device stream for the whole trace; stream numbers are ignored.
    One,
}

/// The most streams one replay may use: `gpumem::Device`'s limit.
pub const MAX_STREAMS: usize = 1024;

/// Device streams a replay of a trace with `trace_streams` streams needs.
pub(crate) fn device_streams(mode: StreamMode, trace_streams: usize) -> usize {
    match mode {
        StreamMode::PerTrace => trace_streams.max(1),
        StreamMode::One => 1,
    }
}
