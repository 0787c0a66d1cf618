//! The 2-d and 3-d shapes of `n` elements the bench cases and the STREAM-like row loops
//! take (both use them; neither owns them).

/// `[r, c]` with `r * c = n`, `r` the largest power of two `≤ √n` (n a power of two gives
/// square or 1:2 shapes: 1024², 8192², 1024×2048).
pub fn dims2(n: usize) -> [usize; 2] {
    let mut r = 1usize;
    while (r * 2) * (r * 2) <= n && (n / (r * 2)) * (r * 2) == n {
        r *= 2;
    }
    [r, n / r]
}

/// `[x, y, z]` with `x * y * z = n` as even as powers of two allow, larger dims first
/// (2^26 → [512, 512, 256], 2^20 → [128, 128, 64]).
pub fn dims3(n: usize) -> [usize; 3] {
    let mut x = 1usize;
    while (x * 2).pow(3) <= n && (n / (x * 2)) * (x * 2) == n {
        x *= 2;
    }
    let [y, z] = dims2(n / x);
    let mut d = [x, y, z];
    d.sort_unstable_by(|a, b| b.cmp(a));
    d
}
