//! Shared helpers of the gpumem benchmarks.
