//! Splitting STREAM loops over the worker threads (the rayon pool tensor-ops also uses).

/// Worker threads used for the STREAM loops: rayon's pool size (`RAYON_NUM_THREADS`, else
/// one per logical CPU).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Length of each of `parts` chunks covering `n` elements, rounded up to a multiple of
/// `align` elements so that chunk starts keep the buffer's alignment; at least `align`.
pub fn chunk_len(n: usize, parts: usize, align: usize) -> usize {
    let align = align.max(1);
    let per = n.div_ceil(parts.max(1));
    per.div_ceil(align).max(1) * align
}

#[cfg(test)]
mod tests {
    use super::chunk_len;

    #[test]
    fn chunks_cover_and_align() {
        assert_eq!(chunk_len(100, 2, 16), 64);
        assert_eq!(chunk_len(0, 2, 16), 16);
        assert_eq!(chunk_len(1 << 20, 2, 16), 1 << 19);
        assert_eq!(chunk_len(7, 0, 0), 7);
    }
}
