//! The elementwise kernel templates: the text of a map, cast, copy or fill kernel of one
//! layout class (contiguous, tiled, strided) around what it computes per element
//! ([`Body`]), and the launch shapes those kernels are written for. [`super::codegen`] names
//! the kernels, picks the template and wraps the text (this module depends on nothing of
//! it).

use std::fmt::Write as _;

use super::ctype::CType;

/// Threads per block of every elementwise kernel.
pub const BLOCK: u32 = 256;
/// Tile edge of the transpose kernel (block is `TILE x TILE_ROWS` threads).
pub const TILE: u32 = 32;
/// Rows of a tile each transpose block walks per step.
pub const TILE_ROWS: u32 = 8;
/// Most vectors (16 bytes of the widest operand) each thread of a contiguous kernel loads
/// before it computes and stores any: the loads of one thread are in flight together.
pub const CONTIG_UNROLL: u32 = 4;

/// Vectors a contiguous-kernel thread loads at once when a vector holds `vec` elements: 4
/// vectors of 4-byte values, fewer of narrow ones (at most 16 elements an operand in
/// registers) and of 8-byte ones (f64 functions such as `exp` would spill), at most
/// [`CONTIG_UNROLL`].
///
/// ```
/// use tensor_kernels_cuda::codegen::contig_unroll;
/// assert_eq!((contig_unroll(2), contig_unroll(4), contig_unroll(8), contig_unroll(16)), (2, 4, 2, 1));
/// ```
pub fn contig_unroll(vec: usize) -> u32 {
    match vec {
        0..=2 => 2,
        v => (16 / v).clamp(1, CONTIG_UNROLL as usize) as u32,
    }
}

/// Index width of strided kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// 32-bit index and offsets.
    I32,
    /// 64-bit index and offsets.
    I64,
}

/// What an elementwise kernel computes per element.
pub(crate) struct Body {
    /// (storage, compute) type of each input.
    pub(crate) inputs: Vec<(CType, CType)>,
    /// Type of `expr`.
    pub(crate) result: CType,
    /// Expression over `x0, x1, ...` (already in compute types) and `a.params[k]`/`a.bits`.
    pub(crate) expr: String,
    /// Output storage type.
    pub(crate) out: CType,
    /// Quantized operands (`KernelSpec::Map::quant`).
    pub(crate) quant: u8,
    /// A quantized output's (qmin, qmax, what NaN stores), as C float literals.
    pub(crate) out_range: Option<[String; 3]>,
}

impl Body {
    /// Input `i` loaded from `src` in its compute type (dequantized when quantized).
    fn load(&self, i: usize, src: &str) -> String {
        let (st, ct) = self.inputs[i];
        let v = conv(st, ct, src);
        if (self.quant >> (i + 1)) & 1 == 1 {
            format!("tops_dequantize({v}, a.q[{}])", i + 1)
        } else {
            v
        }
    }
}

/// `src` (of type `from`) as `to`: a plain use when the types agree, else `tops_cast`.
fn conv(from: CType, to: CType, src: &str) -> String {
    if from == to {
        src.to_string()
    } else {
        format!("tops_cast<{}>({src})", to.name)
    }
}

pub(crate) fn store_expr(body: &Body) -> String {
    match &body.out_range {
        Some([lo, hi, nan]) => {
            conv(body.result, body.out, &format!("tops_quantize({}, a.q[0], {lo}, {hi}, {nan})", body.expr))
        }
        None => conv(body.result, body.out, &body.expr),
    }
}

/// Pointer declarations of the output and inputs.
pub(crate) fn pointers(s: &mut String, body: &Body, ptr: &str) {
    let _ = writeln!(s, "    {}* __restrict__ out = ({}*){ptr}[0];", body.out.name, body.out.name);
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "    const {t}* __restrict__ in{i} = (const {t}*){ptr}[{}];", i + 1, t = st.name);
    }
}

/// Elements per 16-byte vector of the widest operand of `body`.
pub(crate) fn vector_len(body: &Body) -> usize {
    let widest = body.inputs.iter().map(|(s, _)| s.size).chain([body.out.size]).max().unwrap_or(1);
    16 / widest
}

pub(crate) fn contiguous(name: &str, body: &Body) -> String {
    // Elements per vector: the widest operand moves 16 bytes; each thread loads
    // `contig_unroll` vectors (a block's worth apart, so a warp's accesses stay adjacent)
    // before it computes and stores them.
    let vec = vector_len(body);
    // f64 math (exp, tanh, erf of doubles) spills with two vectors a thread: one vector an
    // iteration, the grid-stride loop doing the rest (the planner's grid assumes
    // `contig_unroll`, so such a thread loops twice)
    let f64_math = body.inputs.iter().any(|(s, c)| s.name == "double" || c.name == "double")
        || body.result.name == "double"
        || body.out.name == "double";
    let u = if f64_math { 1 } else { contig_unroll(vec) };
    let mut s = String::new();
    let _ = writeln!(s, "extern \"C\" __global__ void {name}(tops_contig_args a) {{");
    pointers(&mut s, body, "a.ptr");
    s.push_str("    const unsigned long long n = a.n;\n");
    s.push_str("    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    s.push_str("    const unsigned long long nthreads = (unsigned long long)gridDim.x * blockDim.x;\n");
    let _ = writeln!(s, "    bool aligned = ((unsigned long long)out % {}) == 0;", vec * body.out.size);
    // A broadcast input (one element): with one-byte operands (16 elements a vector) it is
    // splatted into a vector once and the element loop reads every input from its vector
    // (the per-element select held 56 registers of a u8 add, 48 without: one-byte maps ran
    // 6-29 % faster on an H200, 2026-11-28); wider operands keep the per-element select
    // (their splat measured 5-12 % slower for casts and silu, whatever ptxas made of it).
    let splat = vec == 16;
    // Each input's vectors arrive as whole words (`tops_raw`) and are split into elements
    // only after every load of the thread is issued: a vector of one- or two-byte elements
    // split as it arrived made ptxas wait for it before issuing the next input's load (two
    // loads in turn instead of together, in every u8/i8/bf16/i16 map of two inputs). Inputs
    // of 4- and 8-byte elements arrive in a register an element and load as elements.
    let as_words = |st: &CType| st.size < 4;
    let vector_type = |st: &CType| {
        let kind = if as_words(st) { "tops_raw" } else { "tops_pack" };
        format!("{kind}<{}, {vec}>", st.name)
    };
    for (i, (st, ct)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "    const bool s{i} = (a.scalar_mask >> {i}) & 1u;");
        if splat {
            let _ = writeln!(s, "    tops_pack<{}, {vec}> b{i}{{}};", st.name);
            let _ = writeln!(s, "    if (s{i}) {{\n        const {} e = in{i}[0];", st.name);
            let _ = writeln!(s, "#pragma unroll\n        for (int k = 0; k < {vec}; ++k) b{i}.v[k] = e;\n    }}");
            let _ = writeln!(s, "    const {} c{i} = tops_to_raw(b{i});", vector_type(st));
        } else {
            let _ = writeln!(s, "    {} b{i}{{}};", ct.name);
            let _ = writeln!(s, "    if (s{i}) b{i} = {};", body.load(i, &format!("in{i}[0]")));
        }
        let _ = writeln!(s, "    aligned = aligned && (s{i} || ((unsigned long long)in{i} % {}) == 0);", vec * st.size);
    }
    let _ = writeln!(s, "    const unsigned long long nvec = aligned ? n / {vec} : 0;");
    let _ = writeln!(
        s,
        "    for (unsigned long long v0 = (unsigned long long)blockIdx.x * blockDim.x * {u} + threadIdx.x; v0 < nvec; \
         v0 += nthreads * {u}) {{"
    );
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "        {} p{i}[{u}];", vector_type(st));
    }
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "        for (int u = 0; u < {u}; ++u) {{");
    s.push_str("            const unsigned long long v = v0 + (unsigned long long)u * blockDim.x;\n");
    s.push_str("            if (v < nvec) {\n");
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let load = format!("((const {}*)in{i})[v]", vector_type(st));
        if splat {
            let _ = writeln!(s, "                p{i}[u] = s{i} ? c{i} : {load};");
        } else {
            let _ = writeln!(s, "                if (!s{i}) p{i}[u] = {load};");
        }
    }
    s.push_str("            }\n        }\n");
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "        for (int u = 0; u < {u}; ++u) {{");
    s.push_str("            const unsigned long long v = v0 + (unsigned long long)u * blockDim.x;\n");
    s.push_str("            if (v < nvec) {\n");
    let _ = writeln!(s, "            tops_pack<{}, {vec}> po;", body.out.name);
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let split =
            if as_words(st) { format!("tops_from_raw<{}, {vec}>(p{i}[u])", st.name) } else { format!("p{i}[u]") };
        let _ = writeln!(s, "            const tops_pack<{}, {vec}> e{i} = {split};", st.name);
    }
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "            for (int k = 0; k < {vec}; ++k) {{");
    for (i, (_, ct)) in body.inputs.iter().enumerate() {
        let x = body.load(i, &format!("e{i}.v[k]"));
        let x = if splat { x } else { format!("s{i} ? b{i} : {x}") };
        let _ = writeln!(s, "                const {} x{i} = {x};", ct.name);
    }
    let _ = writeln!(s, "                po.v[k] = {};", store_expr(body));
    s.push_str("            }\n");
    let _ = writeln!(s, "            ((tops_pack<{}, {vec}>*)out)[v] = po;", body.out.name);
    s.push_str("            }\n        }\n    }\n");
    let _ = writeln!(s, "    for (unsigned long long i = nvec * {vec} + tid; i < n; i += nthreads) {{");
    for (i, (_, ct)) in body.inputs.iter().enumerate() {
        let x = if splat {
            body.load(i, &format!("in{i}[s{i} ? 0 : i]"))
        } else {
            format!("s{i} ? b{i} : {}", body.load(i, &format!("in{i}[i]")))
        };
        let _ = writeln!(s, "        const {} x{i} = {x};", ct.name);
    }
    let _ = writeln!(s, "        out[i] = {};", store_expr(body));
    s.push_str("    }\n}\n");
    s
}

/// The tiled map ([`MapLayout::Tiled`]): per 32x32 tile, the inputs whose bit is set in
/// `a.bits` are loaded into padded shared-memory tiles with consecutive threads walking the
/// rows (along which those inputs are dense), the other inputs into registers along the
/// columns; after the barrier each thread computes and stores its elements along the
/// columns (along which the output is dense).
pub(crate) fn tiled(name: &str, body: &Body) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({}) {name}(tops_strided_args64 a) {{",
        TILE * TILE_ROWS
    );
    pointers(&mut s, body, "a.ptr");
    let per = TILE / TILE_ROWS;
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "    __shared__ {} tile{i}[{TILE}][{}];", st.name, TILE + 1);
    }
    s.push_str("    const int tx = threadIdx.x, ty = threadIdx.y;\n");
    s.push_str("    const unsigned int tmask = (unsigned int)a.bits;\n");
    s.push_str(
        "    const long long cols = (long long)a.size[0], rows = (long long)a.size[1], batch = (long long)a.size[2];\n",
    );
    let _ = writeln!(
        s,
        "    const long long col_tiles = (cols + {TILE} - 1) / {TILE}, row_tiles = (rows + {TILE} - 1) / {TILE};"
    );
    s.push_str("    const long long tiles = batch * row_tiles * col_tiles;\n");
    s.push_str("    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {\n");
    s.push_str("        const long long ct = t % col_tiles, rt = (t / col_tiles) % row_tiles, b = t / (col_tiles * row_tiles);\n");
    let _ = writeln!(s, "        const long long r0 = rt * {TILE}, c0 = ct * {TILE};");
    // Every input's values are loaded into registers first (the tiled ones along the rows,
    // the others along the columns), and only then are the tiled ones stored to their
    // shared tiles: a shared store needs its load's value, and ptxas kept each input's
    // loads behind the previous input's stores (one full load latency per input a tile).
    s.push_str("        const long long c = c0 + tx;\n");
    for (i, (st, _)) in body.inputs.iter().enumerate() {
        let op = i + 1;
        let _ = writeln!(s, "        {} d{i}[{per}] = {{}};", st.name);
        let _ = writeln!(s, "        if ((tmask >> {i}) & 1u) {{");
        s.push_str("            // tiled: consecutive threads read consecutive rows\n");
        let _ =
            writeln!(s, "            const long long base = b * a.stride[{op}][2] + (r0 + tx) * a.stride[{op}][1];");
        s.push_str("#pragma unroll\n");
        let _ = writeln!(s, "            for (int j = 0; j < {per}; ++j) {{");
        let _ = writeln!(s, "                const long long cj = c0 + ty + j * {TILE_ROWS};");
        let _ = writeln!(
            s,
            "                if (r0 + tx < rows && cj < cols) d{i}[j] = in{i}[base + cj * a.stride[{op}][0]];"
        );
        s.push_str("            }\n        } else {\n");
        s.push_str("            // direct: consecutive threads read consecutive columns\n");
        s.push_str("#pragma unroll\n");
        let _ = writeln!(s, "            for (int j = 0; j < {per}; ++j) {{");
        let _ = writeln!(s, "                const long long r = r0 + ty + j * {TILE_ROWS};");
        let _ = writeln!(
            s,
            "                if (r < rows && c < cols) d{i}[j] = in{i}[b * a.stride[{op}][2] + r * a.stride[{op}][1] + c * a.stride[{op}][0]];"
        );
        s.push_str("            }\n        }\n");
    }
    for (i, _) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "        if ((tmask >> {i}) & 1u) {{");
        s.push_str("#pragma unroll\n");
        let _ = writeln!(s, "            for (int j = 0; j < {per}; ++j) tile{i}[ty + j * {TILE_ROWS}][tx] = d{i}[j];");
        s.push_str("        }\n");
    }
    s.push_str("        __syncthreads();\n");
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "        for (int j = 0; j < {per}; ++j) {{");
    let _ = writeln!(s, "            const int k = ty + j * {TILE_ROWS};");
    s.push_str("            const long long r = r0 + k;\n");
    s.push_str("            if (r < rows && c < cols) {\n");
    for (i, (_, ct)) in body.inputs.iter().enumerate() {
        let _ = writeln!(
            s,
            "                const {} x{i} = {};",
            ct.name,
            body.load(i, &format!("(((tmask >> {i}) & 1u) ? tile{i}[tx][k] : d{i}[j])"))
        );
    }
    let _ = writeln!(
        s,
        "                out[b * a.stride[0][2] + r * a.stride[0][1] + c * a.stride[0][0]] = {};",
        store_expr(body)
    );
    s.push_str("            }\n        }\n        __syncthreads();\n    }\n}\n");
    s
}

/// Elements a thread of the strided kernel takes a round: their offsets computed, then all
/// their loads issued, then computed and stored (`STRIDED_UNROLL` blocks' worth of elements
/// a block a round, each of a thread's a block apart so that a warp's accesses stay
/// adjacent). One element a round kept one load in flight a thread.
pub const STRIDED_UNROLL: u32 = 4;

pub(crate) fn strided(name: &str, body: &Body, index: Index) -> String {
    let (args, uint, int) = match index {
        Index::I32 => ("tops_strided_args32", "unsigned int", "int"),
        Index::I64 => ("tops_strided_args64", "unsigned long long", "long long"),
    };
    let u = STRIDED_UNROLL;
    let nops = body.inputs.len() + 1;
    let mut s = String::new();
    let _ = writeln!(s, "extern \"C\" __global__ void {name}({args} a) {{");
    pointers(&mut s, body, "a.ptr");
    let _ = writeln!(s, "    const {uint} step = ({uint})gridDim.x * blockDim.x * {u};");
    let _ = writeln!(
        s,
        "    for ({uint} first = ({uint})blockIdx.x * blockDim.x * {u} + threadIdx.x; first < a.n; first += step) {{"
    );
    let offs: Vec<String> = (0..nops).map(|k| format!("o{k}[{u}]")).collect();
    let _ = writeln!(s, "        {int} {};", offs.join(", "));
    let _ = writeln!(s, "        bool live[{u}];");
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "        for (int u = 0; u < {u}; ++u) {{");
    let _ = writeln!(s, "            const {uint} i = first + ({uint})u * blockDim.x;");
    s.push_str("            live[u] = i < a.n;\n");
    for k in 0..nops {
        let _ = writeln!(s, "            o{k}[u] = 0;");
    }
    // (an element past the end gets element 0's offsets: computed, never used)
    let _ = writeln!(s, "            {uint} rem = live[u] ? i : 0;");
    s.push_str("#pragma unroll\n");
    s.push_str("            for (int d = 0; d < TOPS_MAX_DIMS; ++d) {\n");
    s.push_str("                if (d == a.ndim) break;\n");
    let _ = writeln!(s, "                const {uint} q = tops_fastdiv<{uint}>(rem, a.magic[d], a.shift[d]);");
    let _ = writeln!(s, "                const {int} r = ({int})(rem - q * a.size[d]);");
    for k in 0..nops {
        let _ = writeln!(s, "                o{k}[u] += r * a.stride[{k}][d];");
    }
    s.push_str("                rem = q;\n            }\n        }\n");
    // every load of the round before any store (an in-place output is the input itself:
    // each element is read, then written, by one thread)
    for (i, (_, ct)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "        {} v{i}[{u}];", ct.name);
        s.push_str("#pragma unroll\n");
        let _ = writeln!(
            s,
            "        for (int u = 0; u < {u}; ++u) if (live[u]) v{i}[u] = {};",
            body.load(i, &format!("in{i}[o{}[u]]", i + 1))
        );
    }
    s.push_str("#pragma unroll\n");
    let _ = writeln!(s, "        for (int u = 0; u < {u}; ++u) {{");
    s.push_str("            if (!live[u]) continue;\n");
    for (i, (_, ct)) in body.inputs.iter().enumerate() {
        let _ = writeln!(s, "            const {} x{i} = v{i}[u];", ct.name);
    }
    let _ = writeln!(s, "            out[o0[u]] = {};", store_expr(body));
    s.push_str("        }\n    }\n}\n");
    s
}
