//! Strided gathers into and scatters out of contiguous block buffers, converting dtypes
//! on the way (Rust `as` rules). Used by the elementwise driver for staged operands.

use tensor_core::{with_dtype, DType, Element};

/// Reads `n` elements of `sdt` at `src` with element stride `stride`, casting into `dst`
/// (contiguous, `ddt`).
///
/// # Safety
/// Every read element is in bounds; `dst` is valid for `n` elements of `ddt`.
pub unsafe fn gather_cast(dst: *mut u8, ddt: DType, src: *const u8, sdt: DType, stride: isize, n: usize) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.add(j).write(s.offset(j as isize * stride).read_unaligned().cast::<D>()) };
        }
    }))
}

/// Writes `n` contiguous elements of `sdt` from `src` into `dst` (`ddt`, element stride
/// `stride`), casting.
///
/// # Safety
/// Every written element is in bounds and exclusively the caller's; `src` valid for `n`.
pub unsafe fn scatter_cast(dst: *mut u8, ddt: DType, stride: isize, src: *const u8, sdt: DType, n: usize) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.offset(j as isize * stride).write_unaligned(s.add(j).read().cast::<D>()) };
        }
    }))
}
