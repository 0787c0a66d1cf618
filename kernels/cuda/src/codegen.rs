//! Kernel templates: complete `extern "C" __global__` CUDA C kernels generated around an
//! op's `__device__` function (or a cast, raw copy or fill), per layout class and per
//! storage dtypes. Every kernel gets a deterministic name derived from what it does.
//!
//! Layout classes:
//! - contiguous: several elements per thread in 16-byte vector accesses when every dense
//!   pointer is aligned (scalar fallback otherwise, plus a tail); an input may be a single
//!   broadcast element (bit in `scalar_mask`);
//! - strided: per-operand offsets from the linear index by fast divmod (`tops_fastdiv`), in
//!   32-bit math when [`super::args::fits_i32`] holds and 64-bit math otherwise;
//! - tiled: a map whose output is dense along its last dim while some inputs are dense along
//!   another dim (`a + b.t()`): those inputs are staged through 32x32 shared-memory tiles,
//!   as the transpose stages its source, so every global access is coalesced;
//! - transpose: 32x32 shared-memory tiles (padded) for copies whose innermost dims differ;
//!   1- and 2-byte elements move in 4-byte words along both dims where the operands allow
//!   ([`packed_fits`]).

use crate::kernel::CudaMapKernel;
use tensor_core::{DType, Error, Result};

use super::ctype::{is_ident, CType};
pub use super::map_templates::{contig_unroll, Index, BLOCK, CONTIG_UNROLL, STRIDED_UNROLL, TILE, TILE_ROWS};
use super::map_templates::{contiguous, strided, tiled, Body};
pub use super::reduce_codegen::{ChainSource, ReduceFn, ReducePass, SoftmaxForm, SMALL_EXTENT_MAX};
use super::transpose_templates::{element_wise, word_wise};
pub use super::transpose_templates::{packed_elements, packed_fits};

/// The CUDA prelude: helper functions of generated code (`tops_add`, `tops_cast`, ...).
pub const PRELUDE: &str = include_str!("../include/prelude.cuh");
/// Kernel argument structs (mirrored by [`super::args`]); [`program`] puts the sizes they
/// need in front of them ([`limit_defines`]).
pub const ARGS_HEADER: &str = include_str!("../include/args.cuh");

/// `#define`s of the argument blocks' sizes from the Rust constants (the one definition of
/// each: [`super::args::MAX_DIMS`], [`tensor_core::MAX_INPUTS`] + 1, [`tensor_core::MAX_PARAMS`]).
pub fn limit_defines() -> String {
    format!(
        "#define TOPS_MAX_DIMS {}\n#define TOPS_MAX_OPERANDS {}\n#define TOPS_MAX_PARAMS {}\n",
        super::args::MAX_DIMS,
        super::args::MAX_OPERANDS,
        super::args::MAX_PARAMS
    )
}

/// Layout class of an elementwise kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapLayout {
    /// Dense operands (inputs may be broadcast scalars).
    Contiguous,
    /// Any strides, including 0 (broadcast) and negative.
    Strided(Index),
    /// Three dims (columns, rows, batch: a [`super::args::StridedArgs64`] with `ndim` 3),
    /// the output dense along the columns; the inputs whose bit is set in the argument
    /// block's `bits` are read through shared-memory tiles (they are dense along the rows),
    /// the others directly. Launched as `TILE x TILE_ROWS` blocks, a tile per step.
    Tiled,
}

impl MapLayout {
    /// Every layout class.
    pub const ALL: [MapLayout; 4] =
        [MapLayout::Contiguous, MapLayout::Strided(Index::I32), MapLayout::Strided(Index::I64), MapLayout::Tiled];

    fn tag(self) -> &'static str {
        match self {
            MapLayout::Contiguous => "contig",
            MapLayout::Strided(Index::I32) => "s32",
            MapLayout::Strided(Index::I64) => "s64",
            MapLayout::Tiled => "tiled",
        }
    }

    /// The argument struct its kernels take.
    pub fn args(self) -> ArgsKind {
        match self {
            MapLayout::Contiguous => ArgsKind::Contig,
            MapLayout::Strided(Index::I32) => ArgsKind::Strided32,
            MapLayout::Strided(Index::I64) | MapLayout::Tiled => ArgsKind::Strided64,
        }
    }
}

/// Which argument struct a kernel takes (by value, as its only parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgsKind {
    /// [`super::args::ContigArgs`].
    Contig,
    /// [`super::args::StridedArgs32`].
    Strided32,
    /// [`super::args::StridedArgs64`].
    Strided64,
    /// [`super::args::TransposeArgs`].
    Transpose,
    /// [`super::args::ReduceArgs`].
    Reduce,
    /// [`super::args::FusedReduceArgs`].
    FusedReduce,
    /// [`super::args::SparseArgs`].
    Sparse,
}

impl ArgsKind {
    /// The C struct name.
    pub fn c_name(self) -> &'static str {
        match self {
            ArgsKind::Contig => "tops_contig_args",
            ArgsKind::Strided32 => "tops_strided_args32",
            ArgsKind::Strided64 => "tops_strided_args64",
            ArgsKind::Transpose => "tops_transpose_args",
            ArgsKind::Reduce => "tops_reduce_args",
            ArgsKind::FusedReduce => "tops_fused_reduce_args",
            ArgsKind::Sparse => "tops_sparse_args",
        }
    }
}

/// An op's `__device__` function, as `#[tensor_op]` emits it. Hashed by its name (which is
/// unique to its source: an op's name and dtype, or a chain's source hash), so that looking
/// up a kernel does not hash the source text on every launch; compared in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFn<'a> {
    /// Function name.
    pub name: &'a str,
    /// CUDA C source defining it.
    pub source: &'a str,
    /// Dtype its inputs are passed in.
    pub compute: DType,
    /// Dtype it returns.
    pub output: DType,
    /// Number of trailing parameters: each is passed as a `tops_param` (the caller's exact
    /// `Scalar`), which converts to the type the function declares for it.
    pub nparams: usize,
}

impl std::hash::Hash for DeviceFn<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.name, self.compute, self.output, self.nparams).hash(state);
    }
}

impl<'a> DeviceFn<'a> {
    /// The function of a registered CUDA row.
    pub fn from_kernel(k: &CudaMapKernel, nparams: usize) -> DeviceFn<'static> {
        DeviceFn { name: k.function, source: k.source, compute: k.compute, output: k.output, nparams }
    }
}

/// One kernel to generate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KernelSpec<'a> {
    /// `out = f(inputs...)`, inputs stored as `inputs[i]` (converted to `func.compute` on
    /// load), result converted to `out` on store.
    Map {
        /// The op's device function.
        func: DeviceFn<'a>,
        /// Storage dtypes of the inputs.
        inputs: Vec<DType>,
        /// Storage dtype of the output.
        out: DType,
        /// Layout class.
        layout: MapLayout,
        /// Bit 0: the output is quantized (its storage dtype is a quantized dtype's
        /// integer); bit `i + 1`: input `i` is. Their arithmetic is `a.q[operand]`.
        quant: u8,
    },
    /// A fused chain (`super::fused`): `out = func(inputs...)` with every input passed in
    /// its storage dtype (the chain's function converts per node) and no params (the
    /// chain's params are constants of its source).
    Fused {
        /// The chain's device function (`compute` is unused).
        func: DeviceFn<'a>,
        /// Storage dtypes of the leaves.
        inputs: Vec<DType>,
        /// Storage dtype of the output.
        out: DType,
        /// Layout class.
        layout: MapLayout,
    },
    /// `dst = src as dst` (Rust `as` rules).
    Cast {
        /// Source dtype.
        src: DType,
        /// Destination dtype.
        dst: DType,
        /// Layout class.
        layout: MapLayout,
    },
    /// Same-dtype strided copy of `bytes`-byte elements (dense copies use memcpy).
    Copy {
        /// Element size: 1, 2, 4 or 8.
        bytes: usize,
        /// Index width.
        index: Index,
    },
    /// Fill with raw `bytes`-byte values.
    Fill {
        /// Element size: 1, 2, 4 or 8.
        bytes: usize,
        /// Layout class.
        layout: MapLayout,
    },
    /// Tiled transpose copy of `bytes`-byte elements (element by element, or in words where
    /// [`packed_fits`] allows).
    Transpose {
        /// Element size: 1, 2, 4 or 8.
        bytes: usize,
        /// Moved in 4-byte words of several elements along both dims (1- and 2-byte
        /// elements whose operands pass [`packed_fits`]), else element by element.
        packed: bool,
    },
    /// A reduction pass over inputs stored as `input` ([`super::reduce_codegen`]).
    Reduce {
        /// The reducer.
        reducer: ReduceFn<'a>,
        /// Storage dtype of the input.
        input: DType,
        /// Which pass.
        pass: ReducePass,
    },
    /// A fused chain's first reduction pass: the reducer folds the values the chain
    /// computes from its leaves, which are never stored (the finish is
    /// [`KernelSpec::ReduceFinish`]).
    FusedReduce {
        /// The reducer.
        reducer: ReduceFn<'a>,
        /// The chain.
        chain: ChainSource<'a>,
        /// Which pass.
        pass: ReducePass,
    },
    /// The second pass of a split reduction: partials combined and finished.
    ReduceFinish {
        /// The reducer.
        reducer: ReduceFn<'a>,
        /// A block per output (few outputs, many partials) instead of a thread per output.
        wide: bool,
    },
    /// Softmax (`log`: log_softmax) of dense rows
    /// ([`super::reduce_codegen::generate_softmax_rows`]).
    SoftmaxRows {
        /// Storage dtype: f16 or bf16 (computed in f32), f32 or f64.
        dtype: DType,
        /// log_softmax instead of softmax.
        log: bool,
        /// How a row is spread over threads.
        form: SoftmaxForm,
    },
    /// A kernel of the sparse layouts' steps ([`super::sparse_codegen`]).
    Sparse(super::sparse_codegen::SparseKernel),
}

/// A generated kernel: its name, its `__global__` text and what it needs around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// Deterministic `extern "C"` name.
    pub name: String,
    /// The kernel definition.
    pub kernel: String,
    /// Device functions it calls: (name, source).
    pub device_fns: Vec<(String, String)>,
    /// Its argument struct.
    pub args: ArgsKind,
    /// True when it uses shared memory and `__syncthreads`.
    pub shared_memory: bool,
}

impl Generated {
    /// A complete NVRTC program holding just this kernel.
    pub fn program(&self) -> String {
        program(std::slice::from_ref(self))
    }
}

/// A complete program: prelude, argument structs (after their sizes), each device function
/// once, the kernels.
pub fn program(kernels: &[Generated]) -> String {
    let mut src = String::with_capacity(PRELUDE.len() + ARGS_HEADER.len() + 4096);
    src.push_str(PRELUDE);
    src.push('\n');
    src.push_str(&limit_defines());
    src.push_str(ARGS_HEADER);
    src.push('\n');
    let mut seen: Vec<&str> = Vec::new();
    for k in kernels {
        for (name, source) in &k.device_fns {
            if !seen.contains(&name.as_str()) {
                seen.push(name);
                src.push_str(source);
                src.push('\n');
            }
        }
    }
    for k in kernels {
        src.push_str(&k.kernel);
        src.push('\n');
    }
    src
}

/// Generates the kernel for `spec`.
pub fn generate(spec: &KernelSpec<'_>) -> Result<Generated> {
    match spec {
        KernelSpec::Map { func, inputs, out, layout, quant } => {
            if !is_ident(func.name) {
                return Err(Error::Cuda(format!("device function name {:?} is not a C identifier", func.name)));
            }
            if inputs.is_empty() || inputs.len() > tensor_core::MAX_INPUTS || func.nparams > tensor_core::MAX_PARAMS {
                return Err(Error::Cuda(format!(
                    "{}: CUDA kernels take 1..={} inputs and at most {} parameters (got {} and {})",
                    func.name,
                    tensor_core::MAX_INPUTS,
                    tensor_core::MAX_PARAMS,
                    inputs.len(),
                    func.nparams
                )));
            }
            let compute = CType::of(func.compute);
            let args: Vec<String> = (0..inputs.len())
                .map(|i| format!("x{i}"))
                .chain((0..func.nparams).map(|p| format!("a.params[{p}]")))
                .collect();
            let out_range = if quant & 1 == 1 { Some(quantized_of(*out)?) } else { None };
            if *quant != 0 && func.compute != DType::F32 {
                return Err(Error::Cuda(format!("{}: quantized operands need a function computing in f32", func.name)));
            }
            let body = Body {
                inputs: inputs.iter().map(|&d| (CType::of(d), compute)).collect(),
                result: CType::of(func.output),
                expr: format!("{}({})", func.name, args.join(", ")),
                out: CType::of(*out),
                quant: *quant,
                out_range,
            };
            let ins: Vec<&str> = inputs.iter().map(|d| d.name()).collect();
            let q = if *quant == 0 { String::new() } else { format!("__q{quant}") };
            let name = format!("tops_map_{}__{}__{}__{}{q}", layout.tag(), func.name, ins.join("_"), out.name());
            let mut g = elementwise(&name, &body, *layout);
            g.device_fns.push((func.name.to_string(), func.source.to_string()));
            Ok(g)
        }
        KernelSpec::Fused { func, inputs, out, layout } => {
            if !is_ident(func.name) || inputs.is_empty() || inputs.len() > tensor_core::MAX_INPUTS {
                return Err(Error::Cuda(format!(
                    "{}: fused CUDA kernels take 1..={} leaf tensors (got {})",
                    func.name,
                    tensor_core::MAX_INPUTS,
                    inputs.len()
                )));
            }
            let args: Vec<String> = (0..inputs.len()).map(|i| format!("x{i}")).collect();
            let body = Body {
                inputs: inputs.iter().map(|&d| (CType::of(d), CType::of(d))).collect(),
                result: CType::of(func.output),
                expr: format!("{}({})", func.name, args.join(", ")),
                out: CType::of(*out),
                quant: 0,
                out_range: None,
            };
            let name = format!("tops_fused_{}__{}__{}", layout.tag(), func.name, out.name());
            let mut g = elementwise(&name, &body, *layout);
            g.device_fns.push((func.name.to_string(), func.source.to_string()));
            Ok(g)
        }
        KernelSpec::Cast { src, dst, layout } => {
            let s = CType::of(*src);
            let body = Body {
                inputs: vec![(s, s)],
                result: s,
                expr: "x0".into(),
                out: CType::of(*dst),
                quant: 0,
                out_range: None,
            };
            let name = format!("tops_cast_{}__{}__{}", layout.tag(), src.name(), dst.name());
            Ok(elementwise(&name, &body, *layout))
        }
        KernelSpec::Copy { bytes, index } => {
            let t = bits(*bytes)?;
            let body = Body { inputs: vec![(t, t)], result: t, expr: "x0".into(), out: t, quant: 0, out_range: None };
            let layout = MapLayout::Strided(*index);
            let name = format!("tops_copy_{}__{}", layout.tag(), t.tag);
            Ok(elementwise(&name, &body, layout))
        }
        KernelSpec::Fill { bytes, layout } => {
            let t = bits(*bytes)?;
            let body = Body {
                inputs: vec![],
                result: t,
                expr: format!("(({})a.bits)", t.name),
                out: t,
                quant: 0,
                out_range: None,
            };
            let name = format!("tops_fill_{}__{}", layout.tag(), t.tag);
            Ok(elementwise(&name, &body, *layout))
        }
        KernelSpec::Transpose { bytes, packed } => transpose(bits(*bytes)?, *packed),
        KernelSpec::Reduce { reducer, input, pass } => reduction(reducer, Some(*input), *pass),
        KernelSpec::ReduceFinish { reducer, wide } => {
            let t = super::reduce_codegen::generate_finish(reducer, *wide)?;
            Ok(Generated {
                name: t.name,
                kernel: t.kernel,
                device_fns: t.device_fns,
                args: ArgsKind::Reduce,
                shared_memory: *wide,
            })
        }
        KernelSpec::FusedReduce { reducer, chain, pass } => {
            let t = super::reduce_codegen::generate_fused(reducer, chain, *pass)?;
            Ok(Generated {
                name: t.name,
                kernel: t.kernel,
                device_fns: t.device_fns,
                args: ArgsKind::FusedReduce,
                shared_memory: true,
            })
        }
        KernelSpec::SoftmaxRows { dtype, log, form } => {
            let t = super::reduce_codegen::generate_softmax_rows(*dtype, *log, *form)?;
            Ok(Generated {
                name: t.name,
                kernel: t.kernel,
                device_fns: t.device_fns,
                args: ArgsKind::Contig,
                shared_memory: true,
            })
        }
        KernelSpec::Sparse(k) => {
            let t = super::sparse_codegen::generate(*k)?;
            Ok(Generated {
                name: t.name,
                kernel: t.kernel,
                device_fns: t.device_fns,
                args: ArgsKind::Sparse,
                shared_memory: k.synchronises(),
            })
        }
    }
}

fn bits(bytes: usize) -> Result<CType> {
    CType::bits(bytes).ok_or_else(|| Error::Cuda(format!("no raw element type of {bytes} bytes (1, 2, 4 or 8)")))
}

/// A reduction pass as a [`Generated`] kernel (shared memory and shuffles for the first
/// pass, whose blocks cooperate; the finishing pass is one thread per output).
fn reduction(r: &ReduceFn<'_>, input: Option<DType>, pass: ReducePass) -> Result<Generated> {
    let t = super::reduce_codegen::generate(r, input, pass)?;
    Ok(Generated {
        name: t.name,
        kernel: t.kernel,
        device_fns: t.device_fns,
        args: ArgsKind::Reduce,
        shared_memory: input.is_some(),
    })
}

/// Every kind of kernel a reduction row can launch: rows, columns and small extents (at
/// their widest bound, the most registers) over `input`, and both finishes.
pub fn reduce_kernels_for(r: ReduceFn<'_>, input: DType) -> Vec<KernelSpec<'_>> {
    vec![
        KernelSpec::Reduce { reducer: r, input, pass: ReducePass::Rows },
        KernelSpec::Reduce { reducer: r, input, pass: ReducePass::Columns },
        KernelSpec::Reduce { reducer: r, input, pass: ReducePass::Small { extent: SMALL_EXTENT_MAX } },
        KernelSpec::ReduceFinish { reducer: r, wide: false },
        KernelSpec::ReduceFinish { reducer: r, wide: true },
    ]
}

/// The quantized dtype stored as `repr` and its (qmin, qmax, NaN's integer) as C floats.
fn quantized_of(repr: DType) -> Result<[String; 3]> {
    let q = DType::QUANTIZED
        .into_iter()
        .find(|q| q.repr() == repr)
        .ok_or_else(|| Error::Cuda(format!("no quantized dtype is stored as {repr}")))?;
    let a = tensor_core::quant::Affine::new(q, 1.0, 0);
    Ok([a.qmin, a.qmax, a.nan].map(|v| format!("{v:?}f")))
}

fn elementwise(name: &str, body: &Body, layout: MapLayout) -> Generated {
    let kernel = match layout {
        MapLayout::Contiguous => contiguous(name, body),
        MapLayout::Strided(index) => strided(name, body, index),
        MapLayout::Tiled => tiled(name, body),
    };
    let shared_memory = layout == MapLayout::Tiled;
    Generated { name: name.to_string(), kernel, device_fns: Vec::new(), args: layout.args(), shared_memory }
}

fn transpose(t: CType, packed: bool) -> Result<Generated> {
    if packed && packed_elements(t.size).is_none() {
        return Err(Error::Cuda(format!("no word-wise transpose of {}-byte elements (only 1 and 2)", t.size)));
    }
    let name = format!("tops_transpose{}__{}", if packed { "_words" } else { "" }, t.tag);
    let kernel = if packed { word_wise(&name, t) } else { element_wise(&name, t) };
    Ok(Generated { name, kernel, device_fns: Vec::new(), args: ArgsKind::Transpose, shared_memory: true })
}

/// Every kernel the templates can produce for `func` over `arity` inputs: each layout class
/// with the inputs stored as the row's dtype (and the output as its output dtype).
/// A quantized row's kernels read and write its dtype's integers, every operand quantized
/// (but a predicate's bool output).
pub fn map_kernels_for(func: DeviceFn<'_>, row_dtype: DType, arity: usize) -> Vec<KernelSpec<'_>> {
    let stored = row_dtype.repr();
    let out = if func.output == DType::Bool { DType::Bool } else { stored };
    let quant = if row_dtype.is_quantized() {
        let inputs = ((1u8 << arity) - 1) << 1;
        inputs | u8::from(out != DType::Bool)
    } else {
        0
    };
    MapLayout::ALL
        .into_iter()
        .map(|layout| KernelSpec::Map { func, inputs: vec![stored; arity], out, layout, quant })
        .collect()
}

/// Every copy, cast, fill and transpose kernel.
pub fn data_movement_kernels() -> Vec<KernelSpec<'static>> {
    let mut v = Vec::new();
    for bytes in [1, 2, 4, 8] {
        v.push(KernelSpec::Copy { bytes, index: Index::I32 });
        v.push(KernelSpec::Copy { bytes, index: Index::I64 });
        v.push(KernelSpec::Transpose { bytes, packed: false });
        if packed_elements(bytes).is_some() {
            v.push(KernelSpec::Transpose { bytes, packed: true });
        }
        // a fill has no input to stage: never tiled
        for layout in MapLayout::ALL.into_iter().filter(|&l| l != MapLayout::Tiled) {
            v.push(KernelSpec::Fill { bytes, layout });
        }
    }
    for src in DType::ALL {
        for dst in DType::ALL {
            if src != dst {
                for layout in MapLayout::ALL {
                    v.push(KernelSpec::Cast { src, dst, layout });
                }
            }
        }
    }
    v
}
