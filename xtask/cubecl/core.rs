//! cubecl-core's exported test macros on the wgpu runtime, as cubecl-wgpu's
//! own test module runs them on WGSL (its `src/lib.rs`, `mod tests`): every
//! macro `testgen_all!` expands to, with the same element types, plus the
//! two it adds beside it. Written by gpumem's `cargo xtask cubecl-client`.
#![allow(unexpected_cfgs, unused_imports)]

// In a module, as in cubecl-wgpu: the macros reach `super::super`.
mod tests {
    pub type TestRuntime = cubecl_wgpu::WgpuRuntime;
    use half::f16;

    cubecl_core::testgen_all!(f32: [f16, f32], i32: [i32, i64], u32: [u32, u64]);
    cubecl_core::testgen_profiling!();
    cubecl_core::testgen_complex_validation!();
}
