//! CUDA graphs over gpumem memory. Every test prints `skipping: <reason>`
//! and returns when this machine has no CUDA driver or device.

use std::sync::Arc;

use cudarc::driver::result;
use mem_capture::cuda::CudaGraphBackend;
use mem_capture::{Capture, CaptureError, CapturePool, CaptureStreams, RecordingFlag};
use mem_pools::{
    MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, MemoryManagementOptions,
    ServerLogger,
};
use mem_storage::{ComputeStorage, CudaResource, ResourceStorage, StatsResource, cuda_available};

type Counted = Arc<StatsResource<CudaResource>>;

struct CudaDevice {
    flag: RecordingFlag,
    mm: MemoryManagement<ResourceStorage<Counted>>,
}

impl CaptureStreams for CudaDevice {
    fn recording_streams(&mut self) -> usize {
        self.flag.recording_streams()
    }
    fn set_recording(&mut self, recording: bool) {
        if recording {
            self.flag.start();
        } else {
            self.flag.stop();
        }
    }
    fn relocate_device(&mut self) {}
    fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool> {
        vec![&mut self.mm]
    }
}

/// A device with one stream, its pool and a backend capturing that stream.
fn device() -> Option<(CudaDevice, CudaGraphBackend, Counted)> {
    if !cuda_available() {
        println!("skipping: no CUDA driver on this machine");
        return None;
    }
    let resource = match CudaResource::new(0) {
        Ok(r) => Arc::new(StatsResource::new(r)),
        Err(err) => {
            println!("skipping: no CUDA device: {err}");
            return None;
        }
    };
    let stream = resource.inner().create_stream().expect("a stream");
    // SAFETY: the only CudaSlice these tests make inside a capture is made,
    // used and dropped on the capturing stream itself.
    let backend =
        unsafe { CudaGraphBackend::on_resource(resource.inner(), stream) }.expect("its stream");
    let mm = MemoryManagement::from_configuration(
        ResourceStorage::on_stream(resource.clone(), stream),
        &MemoryDeviceProperties {
            max_page_size: 1 << 30,
            alignment: 256,
        },
        MemoryConfiguration::SubSlices,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    let dev = CudaDevice {
        flag: RecordingFlag::new(),
        mm,
    };
    Some((dev, backend, resource))
}

const N: u64 = 1 << 20;

#[test]
fn a_cuda_graph_replays_copies_over_gpumem_memory_with_no_device_allocation() {
    let Some((mut dev, mut backend, resource)) = device() else {
        return;
    };
    let input = dev.mm.reserve(N).unwrap();
    let data: Vec<u8> = (0..N).map(|i| (i % 251) as u8).collect();
    dev.mm.write(input.binding(), &data).unwrap();
    let mut capture = Capture::new();
    capture.uses(0, input.binding()).unwrap();
    let mut out = None;
    let graph = capture
        .run(
            &mut dev,
            &mut backend,
            |d| d.mm.reserve(N).map(drop).map_err(Into::into),
            |d, stream| {
                let o = d.mm.reserve(N)?;
                let src = d.mm.get_resource(input.binding(), None, None)?;
                let dst = d.mm.get_resource(o.binding(), None, None)?;
                let fail = |err: cudarc::driver::DriverError| CaptureError::Backend {
                    op: "record",
                    message: err.to_string(),
                };
                // SAFETY: both views are live gpumem allocations of N bytes on
                // this stream's device; the graph pins `o` and `input` is
                // declared with `uses`, so neither moves or frees.
                unsafe {
                    result::memset_d8_async(dst.ptr.0, 0, N as usize, stream.cu_stream())
                        .map_err(fail)?;
                    result::memcpy_dtod_async(dst.ptr.0, src.ptr.0, N as usize, stream.cu_stream())
                        .map_err(fail)?;
                }
                out = Some(o);
                Ok(())
            },
        )
        .unwrap();
    let out = out.unwrap();
    let allocs = resource.stats().total_count;
    for _ in 0..3 {
        graph.replay(&mut backend, &mut dev).unwrap();
    }
    dev.mm.storage().synchronize().unwrap();
    assert_eq!(
        resource.stats().total_count,
        allocs,
        "replay allocates nothing"
    );
    let mut back = vec![0u8; N as usize];
    dev.mm.read(out.binding(), &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn a_cuda_graph_with_memory_nodes_is_refused() {
    let Some((mut dev, mut backend, _resource)) = device() else {
        return;
    };
    let err = Capture::new()
        .run(
            &mut dev,
            &mut backend,
            |_| Ok(()),
            |_, stream| {
                // An allocation through cudarc inside the window: an alloc
                // node, and a free node when it drops.
                let slice = stream
                    .alloc_zeros::<u8>(4096)
                    .map_err(|e| CaptureError::Backend {
                        op: "record",
                        message: e.to_string(),
                    })?;
                drop(slice);
                Ok(())
            },
        )
        .unwrap_err();
    assert!(matches!(err, CaptureError::MemoryNodes { .. }), "{err}");
    assert!(!dev.flag.is_recording());
    assert!(!dev.mm.capture_state().active);
}
