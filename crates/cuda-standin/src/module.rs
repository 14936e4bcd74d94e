//! Stand-in kernels: what a "compiled" module holds.
//!
//! The stand-in NVRTC (the same library, loaded as `libnvrtc.so`) turns a
//! source into a PTX text listing the `__global__` functions it defines,
//! and refuses a kernel it has no host implementation of. Modules load only
//! such a text; a function is a name from [`KERNELS`], run on the host in
//! stream order like any other work.

/// The first line of every stand-in PTX text.
pub const PTX_HEADER: &str = "// gpumem stand-in PTX";

/// Kernels with a host implementation: `axpb(const float* x, float* y,
/// float a, float b, int n)`, `y[i] = a * x[i] + b` (the cudarc_runtime
/// example's kernel).
pub const KERNELS: &[&str] = &["axpb"];

/// The `__global__` functions `source` defines, in order.
pub fn global_functions(source: &str) -> Vec<String> {
    source
        .split("__global__")
        .skip(1)
        .filter_map(|rest| {
            let head = rest.split('(').next()?;
            head.split_whitespace().last().map(str::to_string)
        })
        .collect()
}

/// The PTX text for `source`, or the names with no host implementation.
pub fn compile(source: &str) -> Result<String, Vec<String>> {
    let names = global_functions(source);
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !KERNELS.contains(&n.as_str()))
        .cloned()
        .collect();
    if !missing.is_empty() || names.is_empty() {
        return Err(missing);
    }
    let mut ptx = format!("{PTX_HEADER}\n");
    for n in names {
        ptx.push_str(&format!(".entry {n}\n"));
    }
    Ok(ptx)
}

/// The entries of a stand-in PTX text, or `None` for any other image.
pub fn entries(ptx: &str) -> Option<Vec<String>> {
    let mut lines = ptx.lines();
    (lines.next()? == PTX_HEADER).then(|| {
        lines
            .filter_map(|l| l.strip_prefix(".entry ").map(str::to_string))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_kernel_compiles_to_a_text_that_loads_and_an_unknown_one_is_refused() {
        let src = "extern \"C\" __global__ void axpb(const float* x, float* y) {}";
        let ptx = compile(src).unwrap();
        assert_eq!(entries(&ptx).unwrap(), ["axpb"]);
        assert_eq!(
            compile("__global__ void other(int n) {}"),
            Err(vec!["other".to_string()])
        );
        assert!(
            entries(".version 8.0\n.entry axpb").is_none(),
            "real PTX is not loadable"
        );
    }
}
