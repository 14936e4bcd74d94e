//! Entry points cudarc's safe API reaches that gpumem's paths never call:
//! each refuses with `CUDA_ERROR_NOT_SUPPORTED` (never a silent success),
//! so a new use shows up as an error naming the call, not as a missing
//! symbol's panic. The arguments are not read; under the C calling
//! convention the caller owns them, so a stub may declare none.

use crate::types::{CuResult, NOT_SUPPORTED};

macro_rules! unsupported {
    ($($name:ident),* $(,)?) => {$(
        /// Not modelled by the stand-in: `CUDA_ERROR_NOT_SUPPORTED`.
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> CuResult {
            NOT_SUPPORTED
        }
    )*};
}

unsupported!(
    cuCtxCreate_v3,
    cuCtxCreate_v4,
    cuCtxDestroy_v2,
    cuCtxGetLimit,
    cuCtxSetLimit,
    cuCtxGetCacheConfig,
    cuCtxSetCacheConfig,
    cuCtxSetFlags,
    cuCtxGetStreamPriorityRange,
    cuDeviceGetUuid,
    cuDeviceGetUuid_v2,
    cuDeviceGetMemPool,
    cuDeviceSetMemPool,
    cuDevicePrimaryCtxReset_v2,
    cuDevicePrimaryCtxSetFlags_v2,
    cuDevicePrimaryCtxGetState,
    cuEventElapsedTime,
    cuEventElapsedTime_v2,
    cuFuncGetAttribute,
    cuFuncSetAttribute,
    cuFuncSetCacheConfig,
    cuLaunchCooperativeKernel,
    cuMemAdvise_v2,
    cuMemAllocFromPoolAsync,
    cuMemAllocHost_v2,
    cuMemAllocManaged,
    cuMemFreeHost,
    cuMemHostAlloc,
    cuMemHostRegister_v2,
    cuMemHostUnregister,
    cuMemPoolCreate,
    cuMemPoolDestroy,
    cuMemPrefetchAsync_v2,
    cuMemsetD16Async,
    cuMemsetD32Async,
    cuMemsetD16_v2,
    cuMemsetD32_v2,
    cuModuleGetGlobal_v2,
    cuModuleLoad,
    cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    cuOccupancyMaxPotentialBlockSize,
    cuOccupancyMaxPotentialBlockSizeWithFlags,
    cuPointerGetAttribute,
    cuStreamAttachMemAsync,
    cuStreamGetCaptureInfo_v3,
    cuLaunchHostFunc_v2,
    cuImportExternalMemory,
    cuDestroyExternalMemory,
    cuExternalMemoryGetMappedBuffer,
);
