//! Non-temporal (streaming) store loops over `f32` slices for the STREAM figures.
//!
//! On x86-64 these use SSE `movntps` (part of the x86-64 baseline, so no run-time feature
//! check is needed): plain stores up to the first 16-byte-aligned element, streaming stores
//! for the aligned body, plain stores for the tail, then an `sfence` so the data is globally
//! visible before the function returns. Elsewhere they are plain loops and [`AVAILABLE`] is
//! false.

/// Whether the loops below really use non-temporal stores on this target.
pub const AVAILABLE: bool = cfg!(target_arch = "x86_64");

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::x86_64::{
        __m128, _mm_add_ps, _mm_loadu_ps, _mm_max_ps, _mm_mul_ps, _mm_set1_ps, _mm_setzero_ps, _mm_sfence,
        _mm_stream_ps,
    };

    /// Elements before the first 16-byte-aligned element of `dst` (at most `dst.len()`).
    fn head(dst: &[f32]) -> usize {
        dst.as_ptr().align_offset(16).min(dst.len())
    }

    /// Runs `body(i)` for each aligned 4-element group start `i` of `dst[h..]` and `scalar(i)`
    /// for the head and tail elements.
    fn drive(dst: &mut [f32], mut scalar: impl FnMut(&mut [f32], usize), mut body: impl FnMut(*mut f32, usize)) {
        let n = dst.len();
        let h = head(dst);
        let body_end = h + (n - h) / 4 * 4;
        for i in 0..h {
            scalar(dst, i);
        }
        let p = dst.as_mut_ptr();
        let mut i = h;
        while i < body_end {
            // `p.add(i)` is in bounds (i + 4 <= n) and 16-byte aligned (i - h is a multiple of 4).
            body(p, i);
            i += 4;
        }
        for i in body_end..n {
            scalar(dst, i);
        }
        // SAFETY: SSE is part of the x86-64 baseline, so the instruction exists.
        unsafe { _mm_sfence() };
    }

    /// Streams `v` to `p + i`.
    ///
    /// # Safety
    /// `p + i .. p + i + 4` must be valid for writes and `p + i` 16-byte aligned.
    unsafe fn stream(p: *mut f32, i: usize, v: __m128) {
        // SAFETY: the caller guarantees alignment and that the 4 lanes are writable.
        unsafe { _mm_stream_ps(p.add(i), v) }
    }

    /// Loads 4 lanes of `s` from `i`.
    fn load(s: &[f32], i: usize) -> __m128 {
        let lanes = &s[i..i + 4];
        // SAFETY: `lanes` is 4 readable f32s (bounds-checked above); loadu has no alignment need.
        unsafe { _mm_loadu_ps(lanes.as_ptr()) }
    }

    pub fn copy(dst: &mut [f32], src: &[f32]) {
        assert_eq!(dst.len(), src.len());
        drive(
            dst,
            |d, i| d[i] = src[i],
            // SAFETY (for `stream`): `drive` passes aligned in-bounds group starts.
            |p, i| unsafe { stream(p, i, load(src, i)) },
        );
    }

    pub fn fill(dst: &mut [f32], v: f32) {
        // SAFETY: SSE is part of the x86-64 baseline.
        let splat = unsafe { _mm_set1_ps(v) };
        // SAFETY (for `stream`): `drive` passes aligned in-bounds group starts.
        drive(dst, |d, i| d[i] = v, |p, i| unsafe { stream(p, i, splat) });
    }

    pub fn add(dst: &mut [f32], a: &[f32], b: &[f32]) {
        assert!(dst.len() == a.len() && dst.len() == b.len());
        drive(
            dst,
            |d, i| d[i] = a[i] + b[i],
            // SAFETY (for `stream`): `drive` passes aligned in-bounds group starts.
            |p, i| unsafe { stream(p, i, _mm_add_ps(load(a, i), load(b, i))) },
        );
    }

    pub fn triad_relu(dst: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        assert!(dst.len() == a.len() && dst.len() == b.len() && dst.len() == c.len());
        drive(
            dst,
            |d, i| d[i] = (a[i] * b[i] + c[i]).max(0.0),
            // SAFETY (for `stream`): `drive` passes aligned in-bounds group starts.
            |p, i| unsafe {
                let v = _mm_add_ps(_mm_mul_ps(load(a, i), load(b, i)), load(c, i));
                stream(p, i, _mm_max_ps(v, _mm_setzero_ps()))
            },
        );
    }

    pub fn scale(dst: &mut [f32], a: &[f32], s: f32) {
        assert_eq!(dst.len(), a.len());
        // SAFETY: SSE is part of the x86-64 baseline.
        let k = unsafe { _mm_set1_ps(s) };
        drive(
            dst,
            |d, i| d[i] = a[i] * s,
            // SAFETY (for `stream`): `drive` passes aligned in-bounds group starts.
            |p, i| unsafe { stream(p, i, _mm_mul_ps(load(a, i), k)) },
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    pub fn copy(dst: &mut [f32], src: &[f32]) {
        dst.copy_from_slice(src);
    }
    pub fn fill(dst: &mut [f32], v: f32) {
        dst.fill(v);
    }
    pub fn add(dst: &mut [f32], a: &[f32], b: &[f32]) {
        for ((d, x), y) in dst.iter_mut().zip(a).zip(b) {
            *d = x + y;
        }
    }
    pub fn scale(dst: &mut [f32], a: &[f32], s: f32) {
        for (d, x) in dst.iter_mut().zip(a) {
            *d = x * s;
        }
    }
    pub fn triad_relu(dst: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        for (((d, x), y), z) in dst.iter_mut().zip(a).zip(b).zip(c) {
            *d = (x * y + z).max(0.0);
        }
    }
}

pub(crate) use imp::{add, copy, fill, scale, triad_relu};

#[cfg(test)]
mod tests {
    #[test]
    fn nt_loops_compute_the_same_as_plain_ones() {
        let a: Vec<f32> = (0..103).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..103).map(|i| 2.0 * i as f32).collect();
        // Offset by one element so the head/body/tail split is exercised.
        let mut out = vec![0f32; 104];
        super::copy(&mut out[1..], &a);
        assert_eq!(&out[1..], &a[..]);
        super::add(&mut out[1..], &a, &b);
        assert!(out[1..].iter().enumerate().all(|(i, &x)| x == 3.0 * i as f32));
        super::scale(&mut out[1..], &a, 0.5);
        assert!(out[1..].iter().enumerate().all(|(i, &x)| x == 0.5 * i as f32));
        super::fill(&mut out[1..], 7.0);
        assert!(out[1..].iter().all(|&x| x == 7.0));
        assert_eq!(out[0], 0.0);
    }
}
