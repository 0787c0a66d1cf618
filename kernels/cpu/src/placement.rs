//! Where a scratch buffer starts relative to the data it is used beside.
//!
//! A loop that stores to one buffer and loads from another at the same offsets stalls when
//! the two addresses share their bits below the page size (the CPU takes the load for one
//! of the store's bytes: "4K aliasing"), and a vector access of a buffer that is not on a
//! cache line touches two lines. Placing the scratch half a page from the data, on a line,
//! avoids both.

/// The page size placements are made against.
pub const PAGE: usize = 4096;

/// Bytes (below [`PAGE`]) to skip from address `at` so that it lands on a cache line half a
/// page (mod [`PAGE`]) from address `other`. A buffer needs [`PAGE`] bytes of slack for it.
///
/// ```
/// use tensor_kernels_cpu::placement::{half_page_skew, PAGE};
/// let (at, other) = (1000usize, 64usize);
/// let skew = half_page_skew(at, other);
/// assert!(skew < PAGE);
/// assert_eq!((at + skew) % 64, 0);
/// assert_eq!((at + skew) % PAGE, (other + PAGE / 2) % PAGE);
/// ```
pub fn half_page_skew(at: usize, other: usize) -> usize {
    let target = other.wrapping_add(PAGE / 2) & (PAGE - 1) & !63;
    target.wrapping_sub(at) & (PAGE - 1)
}

#[cfg(test)]
mod tests {
    use super::{half_page_skew, PAGE};

    #[test]
    fn lands_on_a_line_half_a_page_from_the_other_address() {
        for at in [8usize, 16, 4088, 4096, 12_345_672] {
            for other in [0usize, 16, 64, 2047, 2048, 4095, 9_000_000] {
                let skew = half_page_skew(at, other);
                assert!(skew < PAGE, "at {at} other {other}: skew {skew}");
                let base = at + skew;
                assert_eq!(base % 64, 0, "at {at} other {other}");
                assert_eq!(base % PAGE, ((other + PAGE / 2) % PAGE) & !63, "at {at} other {other}");
            }
        }
    }
}
