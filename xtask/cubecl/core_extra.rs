//! cubecl-core's exported test macros that neither `testgen_all!` expands to
//! nor cubecl-wgpu's own test module runs on WGSL. Written by gpumem's
//! `cargo xtask cubecl-client`, so that every exported macro runs somewhere.
#![allow(unexpected_cfgs, unused_imports)]

// In a module, as in cubecl-wgpu: the macros reach `super::super`.
mod tests {
    pub type TestRuntime = cubecl_wgpu::WgpuRuntime;
    use cubecl_core::__private::Runtime;
    use cubecl_core::prelude::*;

    mod complex_core {
        use super::*;
        cubecl_core::testgen_complex_core!();
    }
    mod complex_compare {
        use super::*;
        cubecl_core::testgen_complex_compare!();
    }
    mod complex_math {
        use super::*;
        cubecl_core::testgen_complex_math!();
    }
    mod nested {
        use super::*;
        cubecl_core::testgen_profiling_nested!();
    }
    cubecl_core::testgen_launch_dynamic_count!();
    cubecl_core::testgen_value_form_literals!();
}
