//! Fixed-size array helpers of the vector `Value`s ([`super::lanes`], [`super::floats`]) and
//! the f32 lane math ([`super::math32`]): the one low-level piece they all share.

/// `[f(0), f(1), ..., f(N - 1)]` by a plain loop. Unlike `std::array::from_fn` and
/// `<[T; N]>::map`, which LLVM may leave out of line for long arrays (then compiled for the
/// baseline target only), this always inlines into the block kernels' instruction-set
/// copies, where the loop is vectorized with their registers.
#[inline(always)]
pub(super) fn lanes_from_fn<T: Copy + Default, const N: usize>(f: impl FnMut(usize) -> T) -> [T; N] {
    overwrite([T::default(); N], f)
}

/// [`lanes_from_fn`] writing into a given array (for elements without `Default`).
#[inline(always)]
pub(super) fn overwrite<T: Copy, const N: usize>(mut r: [T; N], mut f: impl FnMut(usize) -> T) -> [T; N] {
    for (i, x) in r.iter_mut().enumerate() {
        *x = f(i);
    }
    r
}
