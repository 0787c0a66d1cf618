//! Magic numbers for division by a runtime-invariant divisor with a multiply-high, as
//! PyTorch's `IntDivider`: `q = (umulhi(n, magic) + n) >> shift`, exact for `n, d < 2^31`
//! with 32-bit words and `n, d < 2^63` with 64-bit words. The device side is
//! `tops_fastdiv` in `kernels/cuda/include/prelude.cuh`.

/// `(magic, shift)` for dividing 32-bit words by `d` (`1 <= d < 2^31`).
pub fn magic32(d: u32) -> (u32, u32) {
    debug_assert!((1..1 << 31).contains(&d));
    let shift = 32 - (d - 1).leading_zeros(); // ceil(log2 d)
    let magic = ((1u64 << 32) * ((1u64 << shift) - d as u64)) / d as u64 + 1;
    (magic as u32, shift)
}

/// `(magic, shift)` for dividing 64-bit words by `d` (`1 <= d < 2^63`).
pub fn magic64(d: u64) -> (u64, u32) {
    debug_assert!((1..1 << 63).contains(&d));
    let shift = 64 - (d - 1).leading_zeros();
    let magic = ((1u128 << 64) * ((1u128 << shift) - d as u128)) / d as u128 + 1;
    (magic as u64, shift)
}

/// The device computation for 32-bit words, on the host.
pub fn fastdiv32(n: u32, magic: u32, shift: u32) -> u32 {
    let hi = ((n as u64 * magic as u64) >> 32) as u32;
    ((hi as u64 + n as u64) >> shift) as u32
}

/// The device computation for 64-bit words, on the host.
pub fn fastdiv64(n: u64, magic: u64, shift: u32) -> u64 {
    let hi = ((n as u128 * magic as u128) >> 64) as u64;
    ((hi as u128 + n as u128) >> shift) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divides_exactly_at_the_edges() {
        let ds32 = [1u32, 2, 3, 5, 7, 10, 31, 32, 33, 1000, 65535, 65537, (1 << 30) + 1, (1 << 31) - 1];
        let ns32 = [0u32, 1, 2, 3, 99, 65536, 1 << 30, (1 << 31) - 2, (1 << 31) - 1];
        for &d in &ds32 {
            let (m, s) = magic32(d);
            for &n in &ns32 {
                assert_eq!(fastdiv32(n, m, s), n / d, "{n} / {d}");
            }
        }
        let ds64 = [1u64, 3, 7, 1 << 31, (1 << 31) + 1, 1_000_000_007, (1 << 62) + 3, (1 << 63) - 1];
        let ns64 = [0u64, 1, 5, 1 << 32, (1 << 40) + 12345, (1 << 62) - 1, (1 << 63) - 1];
        for &d in &ds64 {
            let (m, s) = magic64(d);
            for &n in &ns64 {
                assert_eq!(fastdiv64(n, m, s), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn divides_exactly_on_a_pseudo_random_sweep() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let d = (next() % ((1 << 31) - 1)) as u32 + 1;
            let n = (next() % (1 << 31)) as u32;
            let (m, s) = magic32(d);
            assert_eq!(fastdiv32(n, m, s), n / d);
            let d = next() % ((1 << 63) - 1) + 1;
            let d = d >> (next() % 62);
            let n = next() >> 1;
            let (m, s) = magic64(d.max(1));
            assert_eq!(fastdiv64(n, m, s), n / d.max(1));
        }
    }
}
