//! The two memory engines the wgpu runtime's main memory can run on.

/// Which engine holds the wgpu runtime's main memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// CubeCL's own `MemoryManagement` (the patched crate without `gpumem`).
    Cubecl,
    /// gpumem's, through `gpumem_cubecl::MemoryManagement` (`gpumem` on).
    Gpumem,
}

impl Engine {
    /// Its name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cubecl => "cubecl",
            Engine::Gpumem => "gpumem",
        }
    }

    /// The scratch crate's feature its build turns on (which turns on
    /// cubecl-wgpu's `gpumem`).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Engine::Cubecl => None,
            Engine::Gpumem => Some("cubecl-client/gpumem"),
        }
    }

    /// `--engine`'s value: one engine, or both (`both`, the default).
    pub fn parse(value: &str) -> Result<Vec<Engine>, String> {
        match value {
            "cubecl" => Ok(vec![Engine::Cubecl]),
            "gpumem" => Ok(vec![Engine::Gpumem]),
            "both" => Ok(vec![Engine::Cubecl, Engine::Gpumem]),
            other => Err(format!(
                "--engine takes cubecl, gpumem or both; got {other:?}"
            )),
        }
    }
}
