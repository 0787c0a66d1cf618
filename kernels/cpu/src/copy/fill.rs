//! The CPU fill engine behind `Tensor::fill_` (and broadcast copies): generated per element
//! size; contiguous runs use the widest vector stores (AVX-512 / AVX2 picked at run time;
//! non-temporal above [`NT_THRESHOLD`] destination
//! bytes), strided runs a row loop, split across rayon above the grain (and 256 KiB).

use super::stream::{fill_bytes, pattern_of, NT_THRESHOLD};
use tensor_core::iter::IterPlan;
use tensor_core::registry::RawTensor;
use tensor_core::{with_dtype, Element, Error, Result, Scalar};

/// Runs shorter than this many elements are filled with a plain loop (building the
/// 64-byte pattern would cost more than the stores).
const SHORT_RUN: usize = 64;

/// Writes `v` into `n` elements at `dst`, `stride` elements apart.
///
/// # Safety
/// The `n` addressed elements are valid for writes; `dst` is aligned for `T`; `T` is a
/// plain value of 1, 2, 4 or 8 bytes.
#[inline]
pub(crate) unsafe fn fill_run<T: Copy>(dst: *mut T, stride: isize, n: usize, v: T, nt: bool) {
    let e = std::mem::size_of::<T>();
    if stride == 1 && (n >= SHORT_RUN || nt) && matches!(e, 1 | 2 | 4 | 8) {
        // SAFETY: v is a plain value of e bytes.
        let bytes = unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, e) };
        // SAFETY: n contiguous elements writable and aligned (caller).
        unsafe { fill_bytes(dst as *mut u8, &pattern_of(bytes), e, n * e, nt) };
        return;
    }
    for i in 0..n as isize {
        // SAFETY: element i of the run (caller).
        unsafe { dst.offset(i * stride).write(v) };
    }
}

/// Reinterprets an element as its bit carrier of the same size.
fn to_bits<T: Copy, B: Copy + Default>(v: T) -> B {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<B>());
    let mut b = B::default();
    // SAFETY: equal sizes (asserted); both are plain values without padding.
    unsafe { std::ptr::copy_nonoverlapping(&v as *const T as *const u8, &mut b as *mut B as *mut u8, size_of::<B>()) };
    b
}

/// Fills every element of a canonical plan (operand 0 = destination) with `v`.
///
/// # Safety
/// Every element the plan reaches lies in the destination and none is reached twice.
unsafe fn fill_plan<T: Copy + Send + Sync>(plan: &IterPlan, dst: *mut T, v: T) {
    let nt = plan.numel() * std::mem::size_of::<T>() >= NT_THRESHOLD;
    let d = super::SharedPtr::new(dst);
    let di = plan.inner_strides()[0];
    let grain = super::grain_for(std::mem::size_of::<T>());
    super::for_each_run(plan, grain, |od, _, n| {
        // SAFETY: n elements at stride di from od are elements of the plan (caller).
        unsafe { fill_run(d.get().offset(od), di, n, v, nt) }
    });
}

/// Writes `value` (cast to `dst.dtype` with Rust `as` rules) into every element of `dst`.
/// Matches [`tensor_core::registry::FillFn`].
///
/// # Safety
/// As [`tensor_core::registry::FillFn`]: the storage is locked exclusively, every element
/// reachable through the view lies inside it and none is reachable twice.
pub unsafe fn fill_strided(dst: &RawTensor<'_>, value: Scalar) -> Result<()> {
    if !dst.device.is_cpu() {
        return Err(Error::invalid("fill_", format!("the CPU fill kernel got a tensor on {}", dst.device)));
    }
    if dst.strides.len() != dst.shape.len() {
        return Err(Error::shape("fill_", format!("shape {:?} with strides {:?}", dst.shape, dst.strides)));
    }
    let plan = IterPlan::new(dst.shape, &[dst.strides, dst.strides]);
    with_dtype!(dst.dtype, D => {
        let v = D::from_scalar(value);
        // SAFETY (all arms): caller contract; the carrier has D's size and alignment
        // divides the element size, so the typed pointer is aligned.
        unsafe {
            match std::mem::size_of::<D>() {
                1 => fill_plan::<u8>(&plan, dst.ptr, to_bits(v)),
                2 => fill_plan::<u16>(&plan, dst.ptr as *mut u16, to_bits(v)),
                4 => fill_plan::<u32>(&plan, dst.ptr as *mut u32, to_bits(v)),
                _ => fill_plan::<u64>(&plan, dst.ptr as *mut u64, to_bits(v)),
            }
        }
    });
    Ok(())
}
