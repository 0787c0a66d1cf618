//! The CPU copy/cast engine behind `Tensor::copy_`, `contiguous` and `to_dtype`.
//!
//! Every call is canonicalised ([`IterPlan`]: dims sorted by destination strides and
//! coalesced), classified into a [`CopyClass`], and run by a loop for that class:
//! contiguous runs are memcpy-like (non-temporal stores above
//! [`stream::NT_THRESHOLD`] destination bytes), broadcast sources become fills, transposes
//! run a cache-blocked tiled kernel (SIMD micro-blocks through an L1 buffer), every-other-
//! element reads a SIMD deinterleave, anything else a strided loop. Work is split across
//! rayon above [`crate::parallel::GRAIN`] elements and 256 KiB of destination. Same-
//! dtype copies are generated once per element size; casts convert on load/store with Rust
//! `as` rules. The instruction set is the block kernels' run-time level
//! ([`simd_level`](crate::simd_level::simd_level)).

mod cast;
mod class;
mod drive;
pub mod fill;
mod gather;
mod same;
pub mod stream;
mod transpose;
mod walk;

pub use class::{classify, CopyClass};
pub(crate) use drive::{for_each_run, grain_for, SharedPtr};

use tensor_core::iter::IterPlan;
use tensor_core::registry::RawTensor;
use tensor_core::{with_dtype, Error, Result};

/// Checks that two operands of one copy agree in rank/shape and live on the CPU.
fn check(dst: &RawTensor<'_>, src: &RawTensor<'_>) -> Result<()> {
    if !dst.device.is_cpu() || !src.device.is_cpu() {
        return Err(Error::invalid("copy_", format!("the CPU copy kernel got {} and {}", dst.device, src.device)));
    }
    if dst.shape != src.shape || dst.strides.len() != dst.shape.len() || src.strides.len() != src.shape.len() {
        return Err(Error::shape(
            "copy_",
            format!(
                "kernel operands disagree: dst shape {:?} strides {:?}, src shape {:?} strides {:?}",
                dst.shape, dst.strides, src.shape, src.strides
            ),
        ));
    }
    Ok(())
}

/// Copies `src` into `dst` elementwise, casting with Rust `as` rules when the dtypes
/// differ. Matches [`tensor_core::registry::CopyFn`].
///
/// # Safety
/// As [`tensor_core::registry::CopyFn`]: both storages are locked (dst exclusively), every
/// element reachable through either view lies inside its storage, `dst` has no internal
/// overlap and does not partially overlap `src`.
pub unsafe fn copy_strided(dst: &RawTensor<'_>, src: &RawTensor<'_>) -> Result<()> {
    check(dst, src)?;
    let plan = IterPlan::new(dst.shape, &[dst.strides, src.strides]);
    if dst.dtype == src.dtype {
        if dst.ptr == src.ptr && dst.strides == src.strides {
            return Ok(()); // the same view: nothing to move
        }
        // SAFETY (all arms): caller contract; the bit carrier has the dtype's size, and
        // storage offsets are whole elements of that size, so pointers are aligned.
        unsafe {
            match dst.dtype.size() {
                1 => same::copy_same::<u8>(&plan, dst.ptr, src.ptr),
                2 => same::copy_same::<u16>(&plan, dst.ptr as *mut u16, src.ptr as *const u16),
                4 => same::copy_same::<u32>(&plan, dst.ptr as *mut u32, src.ptr as *const u32),
                _ => same::copy_same::<u64>(&plan, dst.ptr as *mut u64, src.ptr as *const u64),
            }
        }
    } else {
        with_dtype!(dst.dtype, D => with_dtype!(src.dtype, S => {
            // SAFETY: caller contract; D and S are the operands' element types.
            unsafe { cast::copy_cast::<S, D>(&plan, dst.ptr as *mut D, src.ptr as *const S) }
        }));
    }
    Ok(())
}
