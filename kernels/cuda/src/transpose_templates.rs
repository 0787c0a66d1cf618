//! The transpose kernels: copies whose source is dense along one dim (the rows) and whose
//! destination is dense along another (the columns), staged through shared-memory tiles so
//! that both the loads and the stores of a warp are adjacent.
//!
//! - [`element_wise`]: 32x32 tiles of elements (padded against bank conflicts), any element
//!   size and any strides.
//! - [`word_wise`]: for 1- and 2-byte elements, 4-byte words of `P = 4 / size` elements
//!   along both dims: each thread loads words of `P` consecutive rows, and after the barrier
//!   transposes `P x P` blocks in registers (byte permutes) into words of `P` consecutive
//!   columns. A warp moves 128 bytes per access instead of 32 or 64 (a one-byte transpose
//!   element by element is bound by its access count, not by the bytes). [`packed_fits`]
//!   says when the strides and shape allow it.

use std::fmt::Write as _;

use super::ctype::CType;
use super::map_templates::{TILE, TILE_ROWS};

/// Elements per 4-byte word of a `bytes`-byte dtype, when the word-wise kernel serves it.
///
/// ```
/// use tensor_kernels_cuda::codegen::packed_elements;
/// assert_eq!((packed_elements(1), packed_elements(2), packed_elements(4)), (Some(4), Some(2), None));
/// ```
pub fn packed_elements(bytes: usize) -> Option<usize> {
    matches!(bytes, 1 | 2).then_some(4 / bytes)
}

/// Whether the word-wise transpose moves `rows x cols` elements of `bytes` bytes between
/// `src` and `dst` (addresses) with these element strides (batch, row, col): the source
/// dense along the rows, the destination along the columns, and every word either side
/// starting at a 4-byte boundary (both extents and every other stride multiples of
/// [`packed_elements`]).
///
/// ```
/// use tensor_kernels_cuda::codegen::packed_fits;
/// // a [64, 128] f16 transpose of a dense [128, 64] source
/// assert!(packed_fits(2, 64, 128, 0x1000, [0, 128, 1], 0x2000, [0, 1, 64]));
/// assert!(!packed_fits(2, 63, 128, 0x1000, [0, 128, 1], 0x2000, [0, 1, 63]));
/// ```
pub fn packed_fits(
    bytes: usize,
    rows: usize,
    cols: usize,
    dst: u64,
    dst_strides: [i64; 3],
    src: u64,
    src_strides: [i64; 3],
) -> bool {
    let Some(p) = packed_elements(bytes) else { return false };
    let p = p as i64;
    let words = |s: i64| s % p == 0;
    dst.is_multiple_of(4)
        && src.is_multiple_of(4)
        && (rows as i64) % p == 0
        && (cols as i64) % p == 0
        && src_strides[1] == 1
        && dst_strides[2] == 1
        && words(src_strides[0])
        && words(src_strides[2])
        && words(dst_strides[0])
        && words(dst_strides[1])
}

/// The loop over a block's tiles (`edge` elements a side) shared by both kernels: `ct`,
/// `rt`, `b` name the tile, `r0`/`c0` its first row and column, `sb`/`db` the batch offsets.
fn tile_loop(s: &mut String, edge: usize) {
    let _ = writeln!(s, "    const long long row_tiles = (a.rows + {edge} - 1) / {edge};");
    let _ = writeln!(s, "    const long long col_tiles = (a.cols + {edge} - 1) / {edge};");
    s.push_str("    const long long tiles = a.batch * row_tiles * col_tiles;\n");
    s.push_str("    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {\n");
    s.push_str("        const long long ct = t % col_tiles;\n");
    s.push_str("        const long long rt = (t / col_tiles) % row_tiles;\n");
    s.push_str("        const long long b = t / (col_tiles * row_tiles);\n");
    let _ = writeln!(s, "        const long long r0 = rt * {edge}, c0 = ct * {edge};");
    s.push_str("        const long long sb = b * a.src_bs, db = b * a.dst_bs;\n");
}

/// The element-wise transpose of `t`: 32x32 tiles, a padded shared row per column.
pub(crate) fn element_wise(name: &str, t: CType) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({}) {name}(tops_transpose_args a) {{",
        TILE * TILE_ROWS
    );
    let _ = writeln!(s, "    __shared__ {} tile[{TILE}][{}];", t.name, TILE + 1);
    let _ = writeln!(s, "    {0}* __restrict__ dst = ({0}*)a.dst;", t.name);
    let _ = writeln!(s, "    const {0}* __restrict__ src = (const {0}*)a.src;", t.name);
    s.push_str("    const int tx = threadIdx.x, ty = threadIdx.y;\n");
    tile_loop(&mut s, TILE as usize);
    s.push_str("        // load: consecutive threads read consecutive rows (src is dense along rows)\n");
    let _ = writeln!(s, "        for (int k = ty; k < {TILE}; k += {TILE_ROWS}) {{");
    s.push_str("            const long long r = r0 + tx, c = c0 + k;\n");
    s.push_str("            if (r < a.rows && c < a.cols) tile[k][tx] = src[sb + r * a.src_rs + c * a.src_cs];\n");
    s.push_str("        }\n        __syncthreads();\n");
    s.push_str("        // store: consecutive threads write consecutive columns (dst is dense along columns)\n");
    let _ = writeln!(s, "        for (int k = ty; k < {TILE}; k += {TILE_ROWS}) {{");
    s.push_str("            const long long r = r0 + k, c = c0 + tx;\n");
    s.push_str("            if (r < a.rows && c < a.cols) dst[db + r * a.dst_rs + c * a.dst_cs] = tile[tx][k];\n");
    s.push_str("        }\n        __syncthreads();\n    }\n}\n");
    s
}

/// The byte permutes turning `P` words `w[j]` (column `j`, `P` consecutive rows each) into
/// `P` words `o[i]` (row `i`, `P` consecutive columns each).
fn register_transpose(s: &mut String, p: usize) {
    match p {
        2 => {
            // halves: o0 = (w0.lo, w1.lo), o1 = (w0.hi, w1.hi)
            s.push_str("                o[0] = tops_byte_perm(w[0], w[1], 0x5410u);\n");
            s.push_str("                o[1] = tops_byte_perm(w[0], w[1], 0x7632u);\n");
        }
        _ => {
            // bytes: interleave byte pairs of two columns, then halves of the pairs
            s.push_str("                const unsigned int t0 = tops_byte_perm(w[0], w[1], 0x5140u);\n");
            s.push_str("                const unsigned int t1 = tops_byte_perm(w[2], w[3], 0x5140u);\n");
            s.push_str("                const unsigned int t2 = tops_byte_perm(w[0], w[1], 0x7362u);\n");
            s.push_str("                const unsigned int t3 = tops_byte_perm(w[2], w[3], 0x7362u);\n");
            s.push_str("                o[0] = tops_byte_perm(t0, t1, 0x5410u);\n");
            s.push_str("                o[1] = tops_byte_perm(t0, t1, 0x7632u);\n");
            s.push_str("                o[2] = tops_byte_perm(t2, t3, 0x5410u);\n");
            s.push_str("                o[3] = tops_byte_perm(t2, t3, 0x7632u);\n");
        }
    }
}

/// The word-wise transpose of `t` (1 or 2 bytes): tiles of `32 P x 32 P` elements, a
/// shared row of 32 words per tile column, word `w` of column `k` stored at `w ^ (k / P)`
/// (a swizzle in place of padding: the loads write one column's words, the register
/// transposes read word `w` of `P` columns per thread, and neither has two lanes on one
/// bank). Launched as `TILE x TILE_ROWS` blocks; only for [`packed_fits`] operands.
pub(crate) fn word_wise(name: &str, t: CType) -> String {
    let p = 4 / t.size;
    let edge = TILE as usize * p;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({}) {name}(tops_transpose_args a) {{",
        TILE * TILE_ROWS
    );
    let _ = writeln!(s, "    __shared__ unsigned int tile[{edge}][{TILE}];");
    let _ = writeln!(s, "    {0}* __restrict__ dst = ({0}*)a.dst;", t.name);
    let _ = writeln!(s, "    const {0}* __restrict__ src = (const {0}*)a.src;", t.name);
    s.push_str("    const int tx = threadIdx.x, ty = threadIdx.y;\n");
    tile_loop(&mut s, edge);
    let _ = writeln!(s, "        // load: thread tx reads the word of rows r0 + {p} tx .. for column c0 + k");
    let _ = writeln!(s, "        const long long r = r0 + {p} * tx;");
    // constant trip counts, unrolled, every load into a register before any shared store:
    // the thread's loads are in flight together
    let loads = edge / TILE_ROWS as usize;
    let _ =
        writeln!(s, "        const unsigned int* col = (const unsigned int*)(src + sb + r + (c0 + ty) * a.src_cs);");
    let _ = writeln!(s, "        const long long step = {TILE_ROWS} * a.src_cs / {p};");
    let _ = writeln!(s, "        unsigned int v[{loads}];");
    let _ = writeln!(s, "#pragma unroll\n        for (int i = 0; i < {loads}; ++i) {{");
    let _ = writeln!(s, "            const long long c = c0 + ty + i * {TILE_ROWS};");
    s.push_str("            v[i] = (r < a.rows && c < a.cols) ? col[i * step] : 0u;\n");
    s.push_str("        }\n");
    let _ = writeln!(s, "#pragma unroll\n        for (int i = 0; i < {loads}; ++i) {{");
    let _ = writeln!(s, "            const int k = ty + i * {TILE_ROWS};");
    let _ = writeln!(s, "            tile[k][tx ^ ((k / {p}) & 31)] = v[i];");
    s.push_str("        }\n        __syncthreads();\n");
    let _ =
        writeln!(s, "        // store: thread tx writes the words of columns c0 + {p} tx .. for rows r0 + {p} wr ..");
    let _ = writeln!(s, "        const long long c = c0 + {p} * tx;");
    let _ = writeln!(s, "#pragma unroll\n        for (int i = 0; i < {}; ++i) {{", TILE / TILE_ROWS);
    let _ = writeln!(s, "            const int wr = ty + i * {TILE_ROWS};");
    let _ = writeln!(s, "            const long long rw = r0 + {p} * wr;");
    s.push_str("            if (rw < a.rows && c < a.cols) {\n");
    let _ = writeln!(s, "                unsigned int w[{p}], o[{p}];");
    let _ = writeln!(
        s,
        "#pragma unroll\n                for (int j = 0; j < {p}; ++j) w[j] = tile[{p} * tx + j][wr ^ tx];"
    );
    register_transpose(&mut s, p);
    let _ = writeln!(
        s,
        "#pragma unroll\n                for (int q = 0; q < {p}; ++q) *(unsigned int*)(dst + db + (rw + q) * a.dst_rs + c) = o[q];"
    );
    s.push_str("            }\n        }\n        __syncthreads();\n    }\n}\n");
    s
}
