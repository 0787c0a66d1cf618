//! Reduction kernels: `extern "C"` wrappers instantiating the templates of
//! `kernels/cuda/include/reduce.cuh` (rows, columns, finish) for one reducer, input dtype,
//! accumulate dtype and output dtype. [`super::codegen`] wraps the text into its
//! `Generated` kernels (this module depends on nothing of it).

use std::fmt::Write as _;
use tensor_core::{DType, Error, Result};

use super::ctype::{is_ident, CType};
use crate::kernel::CudaReduceKernel;

/// The reduction header: the built-in reducers and the kernel templates.
pub const REDUCE_HEADER: &str = include_str!("../include/reduce.cuh");
/// Threads per block of the row and column kernels (the `__launch_bounds__`).
pub const REDUCE_BLOCK: u32 = 256;
/// The longest extent the small-extent pass ([`ReducePass::Small`]) folds.
pub const SMALL_EXTENT_MAX: u8 = 16;

/// A reducer struct template instantiated for one accumulate dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReduceFn<'a> {
    /// Template name (`tops_red_amax`).
    pub name: &'a str,
    /// CUDA C defining it ("" for the header's built-ins).
    pub source: &'a str,
    /// Accumulate dtype (the template argument).
    pub compute: DType,
    /// Output dtype.
    pub output: DType,
}

impl ReduceFn<'static> {
    /// The reducer of a registered CUDA reduction row.
    pub fn from_kernel(k: &CudaReduceKernel) -> ReduceFn<'static> {
        ReduceFn { name: k.reducer, source: k.source, compute: k.compute, output: k.output }
    }
}

/// Which first-pass kernel a reduction launch uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReducePass {
    /// A block per output (and slice): reducing along the densest input dim.
    Rows,
    /// A thread per output, 32 adjacent outputs a block: reducing along a strided dim.
    Columns,
    /// A thread per output folding its whole extent of at most `extent` elements (2, 4, 8
    /// or 16) along one reduced dim, several outputs a thread: tiny extents on either dim.
    Small {
        /// The most elements an output folds (the kernel's compile-time bound).
        extent: u8,
    },
}

impl ReducePass {
    /// The kernel-name tag and template of this pass (`_of`: the source-generic template).
    fn template(self, of: bool) -> (String, String) {
        let sfx = if of { "_of" } else { "" };
        match self {
            ReducePass::Rows => ("rows".into(), format!("tops_reduce_rows{sfx}")),
            ReducePass::Columns => ("columns".into(), format!("tops_reduce_columns{sfx}")),
            ReducePass::Small { extent } => (format!("small{extent}"), format!("tops_reduce_small{sfx}")),
        }
    }

    /// The template arguments after the reducer, source or input, and output types.
    fn extra_args(self) -> String {
        match self {
            ReducePass::Small { extent } => format!(", {extent}"),
            _ => String::new(),
        }
    }
}

/// A reduction kernel's text: its name, its `__global__` definition, and the device code it
/// needs in front of it as (name, source) pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceKernelText {
    /// Deterministic `extern "C"` name.
    pub name: String,
    /// The kernel definition.
    pub kernel: String,
    /// The reduction header, then the reducer's own source when it has one.
    pub device_fns: Vec<(String, String)>,
}

/// The kernel for one pass (`input: None`: the finishing pass, which never reads the input).
pub fn generate(r: &ReduceFn<'_>, input: Option<DType>, pass: ReducePass) -> Result<ReduceKernelText> {
    if !is_ident(r.name) {
        return Err(Error::Cuda(format!("reducer name {:?} is not a C identifier", r.name)));
    }
    let acc = CType::of(r.compute).name;
    let out = CType::of(r.output);
    let reducer = format!("{}<{acc}>", r.name);
    let (name, kernel) = match input {
        Some(input) => {
            let i = CType::of(input);
            let (tag, template) = pass.template(false);
            let name = format!("tops_reduce_{tag}__{}__{}__{}__{}", r.name, i.tag, CType::of(r.compute).tag, out.tag);
            let body = format!(
                "extern \"C\" __global__ void __launch_bounds__({REDUCE_BLOCK}) {name}(tops_reduce_args a) {{\n\
                 \x20   {template}<{reducer}, {}, {}{}>(a);\n}}\n",
                i.name,
                out.name,
                pass.extra_args()
            );
            (name, body)
        }
        None => return generate_finish(r, false),
    };
    let mut device_fns = vec![("tops_reduce_header".to_string(), REDUCE_HEADER.to_string())];
    if !r.source.is_empty() {
        device_fns.push((r.name.to_string(), r.source.to_string()));
    }
    Ok(ReduceKernelText { name, kernel, device_fns })
}

/// The second pass of a split reduction: a thread per output combines its partials, or
/// (`wide`, for few outputs) a block per output.
///
/// ```
/// use tensor_kernels_cuda::reduce_codegen::{generate_finish, ReduceFn};
/// use tensor_core::DType;
/// let sum = ReduceFn { name: "tops_red_amax", source: "", compute: DType::F32, output: DType::F32 };
/// assert!(generate_finish(&sum, true).unwrap().kernel.contains("tops_reduce_finish_wide<"));
/// assert!(generate_finish(&sum, false).unwrap().kernel.contains("tops_reduce_finish<"));
/// ```
pub fn generate_finish(r: &ReduceFn<'_>, wide: bool) -> Result<ReduceKernelText> {
    if !is_ident(r.name) {
        return Err(Error::Cuda(format!("reducer name {:?} is not a C identifier", r.name)));
    }
    let acc = CType::of(r.compute);
    let out = CType::of(r.output);
    // (no __launch_bounds__: with one, ptxas gives 2-byte accumulators a stack slot)
    let (tag, template) =
        if wide { ("finish_wide", "tops_reduce_finish_wide") } else { ("finish", "tops_reduce_finish") };
    let name = format!("tops_reduce_{tag}__{}__{}__{}", r.name, acc.tag, out.tag);
    let kernel = format!(
        "extern \"C\" __global__ void {name}(tops_reduce_args a) {{\n\x20   {template}<{}<{}>, {}>(a);\n}}\n",
        r.name, acc.name, out.name
    );
    let mut device_fns = vec![("tops_reduce_header".to_string(), REDUCE_HEADER.to_string())];
    if !r.source.is_empty() {
        device_fns.push((r.name.to_string(), r.source.to_string()));
    }
    Ok(ReduceKernelText { name, kernel, device_fns })
}

/// The fused softmax rows header (needs [`REDUCE_HEADER`] in front of it).
pub const SOFTMAX_ROWS_HEADER: &str = include_str!("../include/softmax_rows.cuh");

/// How the fused softmax rows spread a row over threads (`kernels/cuda/include/softmax_rows.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoftmaxForm {
    /// The row held in registers by `lanes` threads (a power of two up to 1024; blocks of
    /// `max(lanes, 128)` threads hold several rows), `nv` vectors of `vec` elements each.
    Registers {
        /// Elements a load moves: 16 bytes' worth, or 1 when rows are not 16-byte aligned.
        vec: u8,
        /// Vectors a thread holds.
        nv: u8,
        /// Threads a row.
        lanes: u16,
    },
    /// A block of [`SOFTMAX_STREAM_BLOCK`] threads a row, reading it three times in
    /// `vec`-element vectors (max, Σ, output; the last two from L2).
    Streaming {
        /// Elements a load moves.
        vec: u8,
    },
}

impl SoftmaxForm {
    /// Threads a block of this form.
    ///
    /// ```
    /// use tensor_kernels_cuda::reduce_codegen::SoftmaxForm;
    /// assert_eq!(SoftmaxForm::Registers { vec: 4, nv: 1, lanes: 8 }.block_threads(), 128);
    /// assert_eq!(SoftmaxForm::Registers { vec: 4, nv: 8, lanes: 512 }.block_threads(), 512);
    /// assert_eq!(SoftmaxForm::Streaming { vec: 4 }.block_threads(), 512);
    /// ```
    pub fn block_threads(self) -> u32 {
        match self {
            SoftmaxForm::Registers { lanes, .. } => u32::from(lanes).max(SOFTMAX_MIN_BLOCK),
            SoftmaxForm::Streaming { .. } => SOFTMAX_STREAM_BLOCK,
        }
    }

    /// Rows a block of this form covers at once.
    pub fn rows_per_block(self) -> u32 {
        match self {
            SoftmaxForm::Registers { lanes, .. } => self.block_threads() / u32::from(lanes).max(1),
            SoftmaxForm::Streaming { .. } => 1,
        }
    }
}

/// Threads of a streaming softmax block.
pub const SOFTMAX_STREAM_BLOCK: u32 = 512;
/// Fewest threads of a register-form softmax block (short rows: several rows a block).
pub const SOFTMAX_MIN_BLOCK: u32 = 128;
/// Compute-type values a thread of the register form holds at most: 32 floats, or 8
/// doubles (whose `exp` needs the registers a 1024-thread block leaves besides).
///
/// ```
/// use tensor_kernels_cuda::reduce_codegen::softmax_register_elems;
/// use tensor_core::DType;
/// assert_eq!((softmax_register_elems(DType::F16), softmax_register_elems(DType::F64)), (32, 8));
/// ```
pub fn softmax_register_elems(dtype: DType) -> usize {
    if dtype.compute() == DType::F64 {
        8
    } else {
        32
    }
}

/// The fused softmax (`log`: log_softmax) kernel over the dense rows of a `dtype` tensor
/// (f32 or f64: stored and computed in that type; f16 or bf16: computed in f32, rounded
/// once) in `form`, taking `tops_contig_args` (output, input, element count, the row length
/// as the first param).
///
/// ```
/// use tensor_kernels_cuda::reduce_codegen::{generate_softmax_rows, SoftmaxForm};
/// use tensor_core::DType;
/// let k = generate_softmax_rows(DType::F32, true, SoftmaxForm::Registers { vec: 4, nv: 8, lanes: 32 }).unwrap();
/// assert_eq!(k.name, "tops_softmax_rows__log_softmax__f32__r4x8x32");
/// assert!(k.kernel.contains("tops_softmax_rows_regs<float, float, true, 4, 8, 32>(a)"));
/// let h = generate_softmax_rows(DType::F16, false, SoftmaxForm::Streaming { vec: 8 }).unwrap();
/// assert!(h.kernel.contains("tops_softmax_rows_stream<__half, float, false, 8>(a)"));
/// assert!(generate_softmax_rows(DType::I32, false, SoftmaxForm::Streaming { vec: 1 }).is_err());
/// assert!(generate_softmax_rows(DType::F32, false, SoftmaxForm::Streaming { vec: 2 }).is_err());
/// assert!(generate_softmax_rows(DType::F64, false, SoftmaxForm::Registers { vec: 2, nv: 5, lanes: 4 }).is_err());
/// ```
pub fn generate_softmax_rows(dtype: DType, log: bool, form: SoftmaxForm) -> Result<ReduceKernelText> {
    if !dtype.is_float() {
        return Err(Error::Cuda(format!("the fused CUDA softmax rows take float dtypes, not {dtype}")));
    }
    // f16/bf16 rows are computed in f32 and rounded once, as on the CPU.
    let (t, c) = (CType::of(dtype), CType::of(dtype.compute()));
    let wide = 16 / dtype.size();
    let vec = match form {
        SoftmaxForm::Registers { vec, .. } | SoftmaxForm::Streaming { vec } => usize::from(vec),
    };
    if vec != 1 && vec != wide {
        return Err(Error::Cuda(format!("softmax rows of {dtype} load 1 or {wide} elements at a time, not {vec}")));
    }
    let tag = if log { "log_softmax" } else { "softmax" };
    let (name, call) = match form {
        SoftmaxForm::Registers { nv, lanes, .. } => {
            let (held, most) = (usize::from(nv) * vec, softmax_register_elems(dtype));
            if nv == 0 || held > most || !lanes.is_power_of_two() || lanes > 1024 {
                return Err(Error::Cuda(format!(
                    "softmax rows of {dtype} in registers: {nv} vectors of {vec} a thread ({held} values, at \
                     most {most}) over {lanes} lanes (a power of two up to 1024)"
                )));
            }
            (
                format!("tops_softmax_rows__{tag}__{}__r{vec}x{nv}x{lanes}", t.tag),
                format!("tops_softmax_rows_regs<{}, {}, {log}, {vec}, {nv}, {lanes}>(a)", t.name, c.name),
            )
        }
        SoftmaxForm::Streaming { .. } => (
            format!("tops_softmax_rows__{tag}__{}__s{vec}", t.tag),
            format!("tops_softmax_rows_stream<{}, {}, {log}, {vec}>(a)", t.name, c.name),
        ),
    };
    let kernel = format!(
        "extern \"C\" __global__ void __launch_bounds__({}) {name}(tops_contig_args a) {{\n\x20   {call};\n}}\n",
        form.block_threads()
    );
    let device_fns = vec![
        ("tops_reduce_header".to_string(), REDUCE_HEADER.to_string()),
        ("tops_softmax_rows_header".to_string(), SOFTMAX_ROWS_HEADER.to_string()),
    ];
    Ok(ReduceKernelText { name, kernel, device_fns })
}

/// A fused chain ending in a reduction, as its first-pass kernel reads it: the chain's
/// device function over its leaves, whose result (stored as `value` by the eager chain) is
/// never written to memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSource<'a> {
    /// The chain's device function (`super::fused::chain_function`).
    pub name: &'a str,
    /// Its CUDA C.
    pub source: &'a str,
    /// The dtype the function returns.
    pub returns: DType,
    /// The dtype the eager chain's last node stores its result in (what the reducer folds).
    pub value: DType,
    /// Storage dtypes of the leaves.
    pub leaves: Vec<DType>,
}

// Hashed without the source text (the name is the source's hash): a kernel lookup per
// launch should not hash kilobytes of CUDA C.
impl std::hash::Hash for ChainSource<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.name, self.returns, self.value, &self.leaves).hash(state);
    }
}

/// The first-pass kernel of a fused reduction: `pass` over the values `chain` computes from
/// its leaves (`tops_fused_reduce_args`: the reduction's args over the chain's virtual dense
/// result, and the leaves on that result's map plan). It folds exactly the values and in
/// exactly the order the eager reduction of the stored result does.
///
/// ```
/// use tensor_core::DType;
/// use tensor_kernels_cuda::reduce_codegen::{generate_fused, ChainSource, ReduceFn, ReducePass};
/// let sum = ReduceFn { name: "tops_red_amax", source: "", compute: DType::F32, output: DType::F32 };
/// let chain = ChainSource {
///     name: "sq",
///     source: "__device__ float sq(float x) { return x * x; }",
///     returns: DType::F32,
///     value: DType::F32,
///     leaves: vec![DType::F32],
/// };
/// let k = generate_fused(&sum, &chain, ReducePass::Rows).unwrap();
/// assert!(k.kernel.contains("tops_fused_reduce_args") && k.name.contains("sq"));
/// ```
pub fn generate_fused(r: &ReduceFn<'_>, chain: &ChainSource<'_>, pass: ReducePass) -> Result<ReduceKernelText> {
    if !is_ident(r.name) || !is_ident(chain.name) {
        return Err(Error::Cuda(format!("reducer {:?} or chain {:?} is not a C identifier", r.name, chain.name)));
    }
    if chain.leaves.is_empty() || chain.leaves.len() > tensor_core::MAX_INPUTS {
        return Err(Error::Cuda(format!(
            "{}: a fused CUDA reduction takes 1..={} leaf tensors (got {})",
            chain.name,
            tensor_core::MAX_INPUTS,
            chain.leaves.len()
        )));
    }
    let acc = CType::of(r.compute);
    let out = CType::of(r.output);
    let value = CType::of(chain.value);
    let src = format!("tops_chain_src__{}", chain.name);
    let (tag, template) = pass.template(true);
    let name = format!("tops_fused_reduce_{tag}__{}__{}__{}__{}", chain.name, r.name, acc.tag, out.tag);
    // The source struct is a device function of its own: a program holding both passes
    // of one chain defines it once.
    let mut k = String::new();
    let _ = writeln!(k, "struct {src} {{");
    let _ = writeln!(k, "    typedef {} value_t;", value.name);
    k.push_str("    const tops_strided_args64& m;\n");
    k.push_str("    static constexpr int V = 16 / sizeof(value_t);\n");
    // computing the chain for several vectors at once would spill
    k.push_str("    static constexpr int prefetch = 1;\n");
    // Whole vectors of each leaf: every leaf dense along the run (its vectors aligned) or
    // broadcast along it; decided once per block.
    k.push_str("    bool vec;\n");
    let unit: Vec<String> = chain
        .leaves
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let l = i + 1;
            format!(
                "(m.stride[{l}][0] == 0 || (m.stride[{l}][0] == 1 && (unsigned long long)m.ptr[{l}] % (sizeof({}) * V) == 0))",
                CType::of(d).name
            )
        })
        .collect();
    let _ = writeln!(
        k,
        "    TOPS_D explicit {src}(const tops_strided_args64& leaves) : m(leaves) {{\n        vec = m.ndim == 1 && {};\n    }}",
        unit.join(" && ")
    );
    k.push_str("    TOPS_D value_t at(long long f) const {\n");
    let offs: Vec<String> = (1..=chain.leaves.len()).map(|l| format!("o{l} = 0")).collect();
    let _ = writeln!(k, "        long long {};", offs.join(", "));
    k.push_str("        if (m.ndim == 1) {\n");
    for l in 1..=chain.leaves.len() {
        let _ = writeln!(k, "            o{l} = f * m.stride[{l}][0];");
    }
    k.push_str("        } else {\n            unsigned long long rem = (unsigned long long)f;\n");
    k.push_str("#pragma unroll\n            for (int d = 0; d < TOPS_MAX_DIMS; ++d) {\n");
    k.push_str("                if (d == m.ndim) break;\n");
    k.push_str(
        "                const unsigned long long q = tops_fastdiv<unsigned long long>(rem, m.magic[d], m.shift[d]);\n",
    );
    k.push_str("                const long long c = (long long)(rem - q * m.size[d]);\n");
    for l in 1..=chain.leaves.len() {
        let _ = writeln!(k, "                o{l} += c * m.stride[{l}][d];");
    }
    k.push_str("                rem = q;\n            }\n        }\n");
    let loads: Vec<String> = chain
        .leaves
        .iter()
        .enumerate()
        .map(|(i, &d)| format!("((const {}*)m.ptr[{}])[o{}]", CType::of(d).name, i + 1, i + 1))
        .collect();
    let call = format!("{}({})", chain.name, loads.join(", "));
    let expr = if chain.returns == chain.value { call } else { format!("tops_cast<{}>({call})", value.name) };
    let _ = writeln!(k, "        return {expr};\n    }}");
    // The virtual result is dense and 16-byte aligned, as the eager chain's stored result.
    k.push_str("    TOPS_D long long dense_head(long long off, long long len) const {\n");
    k.push_str("        return tops_aligned_head<value_t>(off, len);\n    }\n");
    k.push_str("    TOPS_D tops_pack<value_t, V> pack(long long off) const {\n        tops_pack<value_t, V> p;\n");
    k.push_str("        if (vec) {\n");
    for (i, &d) in chain.leaves.iter().enumerate() {
        let (l, t) = (i + 1, CType::of(d).name);
        let _ =
            writeln!(k, "            const {t}* q{l} = (const {t}*)m.ptr[{l}];\n            tops_pack<{t}, V> x{l};");
        let _ = writeln!(
            k,
            "            if (m.stride[{l}][0] == 0) {{\n#pragma unroll\n                for (int j = 0; j < V; ++j) x{l}.v[j] = q{l}[0];\n            }} else {{\n                x{l} = *(const tops_pack<{t}, V>*)(q{l} + off);\n            }}"
        );
    }
    let lanes: Vec<String> = (1..=chain.leaves.len()).map(|l| format!("x{l}.v[j]")).collect();
    let lane_call = format!("{}({})", chain.name, lanes.join(", "));
    let lane_expr =
        if chain.returns == chain.value { lane_call } else { format!("tops_cast<{}>({lane_call})", value.name) };
    let _ = writeln!(k, "#pragma unroll\n            for (int j = 0; j < V; ++j) p.v[j] = {lane_expr};");
    k.push_str(
        "        } else {\n#pragma unroll\n            for (int j = 0; j < V; ++j) p.v[j] = at(off + j);\n        }\n",
    );
    k.push_str("        return p;\n    }\n};\n");
    let kernel = format!(
        "extern \"C\" __global__ void __launch_bounds__({REDUCE_BLOCK}) {name}(tops_fused_reduce_args a) {{\n\
         \x20   {template}<{}<{}>, {src}, {}{}>(a.r, {src}(a.m));\n}}\n",
        r.name,
        acc.name,
        out.name,
        pass.extra_args()
    );
    let mut device_fns = vec![("tops_reduce_header".to_string(), REDUCE_HEADER.to_string())];
    if !r.source.is_empty() {
        device_fns.push((r.name.to_string(), r.source.to_string()));
    }
    device_fns.push((chain.name.to_string(), chain.source.to_string()));
    device_fns.push((src, k));
    Ok(ReduceKernelText { name, kernel, device_fns })
}
