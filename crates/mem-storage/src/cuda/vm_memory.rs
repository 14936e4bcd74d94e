//! `VirtualMemory` for [`CudaVirtualMemory`]: the table check, then the
//! driver call, then the table update.
//!
//! Costs (the driver's, per call): reserve and free are cheap address-space
//! bookkeeping; create allocates physical memory (tens of µs to ms for
//! large chunks); map is `cuMemMap` + `cuMemSetAccess` (µs, plus a page
//! table update); unmap waits for nothing: `cuMemUnmap` does not order
//! itself after queued kernels, so the caller proves the memory's work is
//! done (the pool engine's stream-ordered reclamation, mem-pools
//! `arena/stream_order.rs`). Byte access runs on the context's
//! default stream and waits for it: it is for tests and small transfers,
//! not the data path.

use cudarc::driver::{DriverError, result, sys};

use crate::cuda::driver;
use crate::cuda::resource::BACKEND;
use crate::cuda::vm::{CudaVirtualMemory, TeardownWait};
use crate::cuda::vm_driver as drv;
use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::resource::MemInfo;
use crate::vm::table::VmTable;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

impl CudaVirtualMemory {
    fn counted<T>(
        &self,
        call: impl FnOnce(&mut VmTable) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut table = self.lock();
        let result = self.bind().and_then(|()| call(&mut table));
        table.counted(result)
    }

    /// Run a byte transfer on the default stream once `spans` are mapped,
    /// and wait for it. The table stays locked throughout, so no unmap on
    /// another thread can come in between.
    fn transfer(
        &self,
        spans: &[(DevicePtr, u64)],
        what: &'static str,
        work: impl FnOnce(sys::CUstream) -> Result<(), DriverError>,
    ) -> Result<(), StorageError> {
        let table = self.lock();
        for &(ptr, len) in spans {
            table.check_access(ptr.0, len)?;
        }
        if spans.iter().all(|&(_, len)| len == 0) {
            return Ok(());
        }
        self.bind()?;
        let stream = self.ctx.default_stream();
        work(stream.cu_stream()).map_err(driver(what))?;
        stream.synchronize().map_err(driver(what))
    }
}

impl VirtualMemory for CudaVirtualMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }
    fn granularity(&self) -> u64 {
        self.granularity
    }
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.counted(|t| {
            t.granular("bytes", bytes)?;
            let no_room = || StorageError::NoAddressSpace {
                backend: BACKEND,
                requested: bytes,
            };
            let len = usize::try_from(bytes).map_err(|_| no_room())?;
            let base = drv::reserve(len, self.granularity as usize).map_err(|e| match e.0 {
                sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => no_room(),
                _ => driver("reserving a virtual range")(e),
            })?;
            Ok(t.add_range(base, bytes))
        })
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        self.counted(|t| {
            let r = t.check_free(range)?;
            // SAFETY: the table holds this whole reservation with nothing
            // mapped in it; it is removed below, so it is freed once.
            unsafe { drv::free(r.base.0, r.len as usize) }
                .map_err(driver("freeing a virtual range"))?;
            t.remove_range(range);
            Ok(())
        })
    }
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.lock().range_info(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.counted(|t| {
            let claim = t.check_create(bytes)?;
            // `check_create` bounded `bytes` by the device's total memory;
            // a refusal below drops the claim, giving its bytes back.
            match drv::create(self.device, bytes as usize) {
                Ok(handle) => t.add_chunk(claim, handle).inspect_err(|_| {
                    // SAFETY: made just above and never recorded or mapped,
                    // so nothing else can release or use it.
                    if let Err(err) = unsafe { drv::release(handle) } {
                        tracing::error!(%err, "releasing an unrecorded chunk failed");
                    }
                }),
                Err(DriverError(sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)) => {
                    Err(self.out_of_memory(t, bytes))
                }
                Err(e) => Err(driver("creating a physical chunk")(e)),
            }
        })
    }
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.counted(|t| {
            let c = t.check_release(chunk)?;
            // SAFETY: the handle is live and unmapped (checked), and removed
            // from the table below, so it is released once.
            unsafe { drv::release(c.handle) }.map_err(driver("releasing a physical chunk"))?;
            t.remove_chunk(chunk);
            Ok(())
        })
    }
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.lock().chunk(chunk).map(|c| c.bytes)
    }
    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: crate::ShareHandles,
    ) -> Result<(ChunkId, crate::ShareHandles), StorageError> {
        self.share_create(bytes, handles)
    }
    fn share_granularity(&self, handles: crate::ShareHandles) -> u64 {
        self.recommended_share_granularity(handles)
    }
    fn export_chunk(&self, chunk: ChunkId) -> Result<std::os::fd::OwnedFd, StorageError> {
        self.share_export(chunk)
    }
    fn import_chunk(&self, fd: std::os::fd::OwnedFd, bytes: u64) -> Result<ChunkId, StorageError> {
        self.share_import(fd, bytes)
    }
    fn release_imported(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.share_release_imported(chunk)
    }
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        self.counted(|t| {
            let m = t.check_map(range, offset, chunk)?;
            let access = self.access_list();
            // SAFETY: the table proved the span is reserved and empty and the
            // chunk live, unmapped and of exactly `m.bytes`.
            unsafe { drv::map(m.addr, m.bytes as usize, m.handle, &access) }
                .map_err(driver("mapping a chunk"))?;
            t.commit_map(range, m);
            Ok(DevicePtr(m.addr))
        })
    }
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        self.counted(|t| {
            let plan = t.check_unmap(range, offset, bytes)?;
            // No device-wide wait here. `cuMemUnmap` is not ordered after
            // queued work, and unmapping memory a queued kernel still uses
            // is a device fault, so the caller proves the work is done:
            // the pool engine unmaps an idle chunk only once the stream's
            // completed cursor has passed the submit cursor stamped when
            // the chunk went idle (mem-pools `arena/stream_order.rs`), `sleep`
            // synchronizes the storage first, and a dropped backend waits
            // for the device (`Drop`).
            for (done, m) in t.unmapping(&plan).iter().enumerate() {
                // SAFETY: each span is one whole live mapping (checked), and
                // by this method's contract no queued work uses it.
                if let Err(e) = unsafe { drv::unmap(m.addr, m.bytes as usize) } {
                    // Record what the driver did unmap before failing.
                    t.commit_unmap(&plan, done);
                    return Err(driver("unmapping a chunk")(e));
                }
            }
            Ok(t.commit_unmap(&plan, plan.count))
        })
    }
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        let total = self.lock().memory.total();
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(driver("reading memory info"))?;
        Ok(MemInfo {
            free: free as u64,
            total,
        })
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        self.lock().stats
    }
    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        let spans = [(dst, data.len() as u64)];
        // SAFETY: `dst..+len` is mapped (checked under the lock held until
        // the stream is synchronized), and `data` outlives the copy.
        self.transfer(&spans, "copying host to device", |s| unsafe {
            result::memcpy_htod_async(dst.0, data, s)
        })
    }
    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        let spans = [(src, out.len() as u64)];
        // SAFETY: `src..+len` is mapped (checked, lock held until the stream
        // is synchronized); `out` is exclusively borrowed until then.
        self.transfer(&spans, "copying device to host", |s| unsafe {
            result::memcpy_dtoh_async(out, src.0, s)
        })
    }
    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError> {
        // SAFETY: `dst..+bytes` is mapped (checked, lock held until the
        // stream is synchronized); `bytes` fits a mapped span, so usize.
        self.transfer(&[(dst, bytes)], "filling device memory", |s| unsafe {
            result::memset_d8_async(dst.0, value, bytes as usize, s)
        })
    }
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        let overlap = src != dst
            && src.0 < dst.0.saturating_add(bytes)
            && dst.0 < src.0.saturating_add(bytes);
        if overlap && bytes > 0 {
            return Err(StorageError::InvalidArgument {
                parameter: "copy length (source and destination overlap)",
                value: bytes,
                expected: "disjoint ranges: the driver's copies do not handle overlap",
            });
        }
        // SAFETY: both spans are mapped (checked, lock held until the stream
        // is synchronized) and disjoint or identical.
        self.transfer(
            &[(src, bytes), (dst, bytes)],
            "copying device to device",
            |s| unsafe { result::memcpy_dtod_async(dst.0, src.0, bytes as usize, s) },
        )
    }
}

impl CudaVirtualMemory {
    /// Wait for the default stream and every stream named at teardown.
    fn wait_for_users(&self) -> Result<(), StorageError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context at teardown"))?;
        let mut streams = vec![self.ctx.default_stream()];
        for wait in self
            .teardown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            match wait {
                TeardownWait::Stream(stream) => streams.push(stream.clone()),
                TeardownWait::StreamsOf(resource) => {
                    for id in resource.stream_ids() {
                        streams.push(resource.cuda_stream(id)?);
                    }
                }
            }
        }
        for stream in streams {
            stream
                .synchronize()
                .map_err(driver("waiting for a stream at teardown"))?;
        }
        Ok(())
    }
}

impl Drop for CudaVirtualMemory {
    fn drop(&mut self) {
        let held = {
            let table = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
            !(table.ranges.is_empty() && table.chunks.is_empty())
        };
        if !held {
            return;
        }
        // Teardown, not a reserve, free or cleanup path: the backend goes
        // with everything it still maps. It waits for the streams named as
        // using it (and its own default stream, where its copies ran), one
        // stream wait each, never for the whole device: other work on the
        // device goes on. Only a backend dropped with memory still held pays it.
        if let Err(err) = self.wait_for_users() {
            // Work may still use the memory: leaking is safer than unmapping.
            tracing::error!(%err, "a stream did not synchronize; leaking virtual memory");
            return;
        }
        let table = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for m in table.all_mappings() {
            // SAFETY: a live mapping of this backend; every stream that may
            // use it has completed its work (waited for above).
            if let Err(err) = unsafe { drv::unmap(m.addr, m.bytes as usize) } {
                tracing::error!(%err, chunk = %m.chunk, "unmapping while dropping failed");
            }
        }
        for (id, c) in table.chunks.take_all() {
            let id = ChunkId(id);
            // SAFETY: a live chunk, unmapped just above, released once here.
            if let Err(err) = unsafe { drv::release(c.handle) } {
                tracing::error!(%err, chunk = %id, "releasing a chunk while dropping failed");
            }
        }
        for r in std::mem::take(&mut table.ranges) {
            let id = r.id;
            // SAFETY: a live reservation, emptied above, freed once here.
            if let Err(err) = unsafe { drv::free(r.base, r.len as usize) } {
                tracing::error!(%err, range = %id, "freeing a range while dropping failed");
            }
        }
    }
}
