//! Reaching the stand-in's own exports through the driver library cudarc
//! loaded, and the pieces every seeded fault needs.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::sys::{self, CUresult, cudaError_enum};
use cudarc::driver::{CudaContext, CudaStream};

/// The tests share one driver and its violation list: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub struct Standin {
    pub ctx: Arc<CudaContext>,
    _serial: MutexGuard<'static, ()>,
}

/// A symbol of the loaded driver library, if it has it.
fn symbol<T: Copy>(name: &[u8]) -> Option<T> {
    // SAFETY: `culib` only loads the driver library (checked present by
    // the caller); each symbol is read with the type it is exported with.
    unsafe { sys::culib().get::<T>(name).ok().map(|s| *s) }
}

/// The stand-in driver with device 0's context bound, or `None` after
/// printing why the test skips.
pub fn standin() -> Option<Standin> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        println!(
            "skipping: no CUDA driver library on the loader path (cargo xtask cuda-standin adds the stand-in)"
        );
        return None;
    }
    if symbol::<extern "C" fn() -> u32>(b"gpumem_standin_version\0").is_none() {
        println!("skipping: a real CUDA driver is loaded; seeded faults would fault the device");
        return None;
    }
    let ctx = CudaContext::new(0).expect("the stand-in's device 0");
    Some(Standin {
        ctx,
        _serial: serial,
    })
}

impl Standin {
    /// Device 1's context, or `None` after printing why the test skips
    /// (`cargo xtask cuda-standin` runs these tests with two devices).
    pub fn second(&self) -> Option<Arc<CudaContext>> {
        let mut count = 0;
        // SAFETY: a live out-parameter.
        assert_eq!(unsafe { sys::cuDeviceGetCount(&mut count) }, OK);
        if count < 2 {
            println!("skipping: one device (GPUMEM_STANDIN_DEVICES=2 makes two)");
            return None;
        }
        let ctx = CudaContext::new(1).expect("device 1");
        self.ctx.bind_to_thread().unwrap();
        Some(ctx)
    }

    /// Device 0's memory in bytes, as `cuMemGetInfo` reports it.
    pub fn total(&self) -> u64 {
        let (mut free, mut total) = (0, 0);
        // SAFETY: live out-parameters; device 0's context is current.
        assert_eq!(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, OK);
        total as u64
    }

    pub fn violations(&self) -> u64 {
        symbol::<extern "C" fn() -> u64>(b"gpumem_standin_violations\0").expect("the stand-in")()
    }

    pub fn message(&self, index: u64) -> String {
        type F = unsafe extern "C" fn(u64, *mut u8, usize) -> usize;
        let f = symbol::<F>(b"gpumem_standin_violation_message\0").expect("the stand-in");
        let mut buf = vec![0u8; 1024];
        // SAFETY: `buf` holds 1024 bytes, as passed.
        let n = unsafe { f(index, buf.as_mut_ptr(), buf.len()) };
        buf.truncate(n.min(1023));
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// The messages of the violations recorded since `before`.
    pub fn since(&self, before: u64) -> Vec<String> {
        (before..self.violations())
            .map(|i| self.message(i))
            .collect()
    }

    /// Queue the stand-in kernel: sleep `sleep_ms`, then write `value` over
    /// `ptr..+bytes`.
    pub fn kernel(
        &self,
        stream: &CudaStream,
        ptr: u64,
        bytes: usize,
        sleep_ms: u64,
        value: u8,
    ) -> CUresult {
        type F = unsafe extern "C" fn(sys::CUstream, u64, usize, u64, u8) -> CUresult;
        let f = symbol::<F>(b"gpumem_standin_kernel\0").expect("the stand-in");
        // SAFETY: the stand-in's kernel reads its plain arguments only.
        unsafe { f(stream.cu_stream(), ptr, bytes, sleep_ms * 1000, value) }
    }
}

/// Run the test `name` of module `module` (`module_path!()`) again in a
/// new process of this test binary, with `env` set; its output goes to
/// stderr (its own `test result:` line is not this run's, and `cargo
/// xtask` counts those on stdout).
pub fn rerun(module: &str, name: &str, env: &[(&str, &str)]) -> std::process::Child {
    use std::os::fd::AsFd;
    // libtest names a test by its path inside the test crate.
    let module = module.split_once("::").map_or("", |(_, m)| m);
    let stderr = std::io::stderr().as_fd().try_clone_to_owned().unwrap();
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{module}::{name}"), "--nocapture"])
        .envs(env.iter().copied())
        .stdout(stderr)
        .spawn()
        .unwrap()
}

/// Make a later call of entry point `name` fail with `code` (after `skip`
/// more go through).
pub fn fail_call(name: &str, skip: u64, code: CUresult) {
    type F = unsafe extern "C" fn(*const std::ffi::c_char, u64, u32);
    let f = symbol::<F>(b"gpumem_standin_fail_call\0").expect("the stand-in");
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: a NUL-terminated string, read during the call.
    unsafe { f(name.as_ptr(), skip, code as u32) }
}

/// Announce a violation whose message contains `text`, so that it does
/// not abort under `GPUMEM_STANDIN_ABORT=1`.
pub fn expect_violation(text: &str) {
    type F = unsafe extern "C" fn(*const std::ffi::c_char);
    let f = symbol::<F>(b"gpumem_standin_expect_violation\0").expect("the stand-in");
    let text = std::ffi::CString::new(text).unwrap();
    // SAFETY: a NUL-terminated string, read during the call.
    unsafe { f(text.as_ptr()) }
}

pub const OK: CUresult = cudaError_enum::CUDA_SUCCESS;
pub const G: usize = 2 << 20;

/// Pinned device memory on device 0, as gpumem asks for it.
pub fn prop() -> sys::CUmemAllocationProp {
    // SAFETY: an all-zero CUmemAllocationProp is a valid value (plain
    // integers, a null pointer, enums whose 0 is listed); fields set below.
    let mut p: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    p.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    p
}

/// As [`prop`], shareable as a POSIX file descriptor.
pub fn shareable() -> sys::CUmemAllocationProp {
    let mut p = prop();
    p.requestedHandleTypes =
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p
}

pub fn access() -> sys::CUmemAccessDesc {
    access_for(0, true)
}

/// Read-write access for device `dev` (`grant`), or none (a revoke).
pub fn access_for(dev: i32, grant: bool) -> sys::CUmemAccessDesc {
    use sys::CUmemAccess_flags::{
        CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        },
        flags: if grant {
            CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        } else {
            CU_MEM_ACCESS_FLAGS_PROT_NONE
        },
    }
}

/// Reserve `len` bytes, create a chunk of `len` and map it there; with
/// `grant`, also set read-write access. Returns (address, handle).
pub fn mapped(len: usize, grant: bool) -> (u64, u64) {
    let mut at = 0;
    let mut handle = 0;
    // SAFETY: out-parameters are live locals; the sizes are granular.
    unsafe {
        assert_eq!(sys::cuMemAddressReserve(&mut at, len, 0, 0, 0), OK);
        assert_eq!(sys::cuMemCreate(&mut handle, len, &prop(), 0), OK);
        assert_eq!(sys::cuMemMap(at, len, 0, handle, 0), OK);
        if grant {
            assert_eq!(sys::cuMemSetAccess(at, len, &access(), 1), OK);
        }
    }
    (at, handle)
}

/// Unmap, release and free what [`mapped`] made.
pub fn unmapped(at: u64, handle: u64, len: usize) {
    // SAFETY: a whole mapping made by `mapped`, its work done.
    unsafe {
        assert_eq!(sys::cuMemUnmap(at, len), OK);
        assert_eq!(sys::cuMemRelease(handle), OK);
        assert_eq!(sys::cuMemAddressFree(at, len), OK);
    }
}
