//! Reduction kernels: `extern "C"` wrappers instantiating the templates of
//! `kernels/cuda/include/reduce.cuh` (rows, columns, finish) for one reducer, input dtype,
//! accumulate dtype and output dtype. [`super::codegen`] wraps the text into its
//! `Generated` kernels (this module depends on nothing of it).

use tensor_core::{DType, Error, Result};

use super::ctype::{is_ident, CType};
use crate::kernel::CudaReduceKernel;

/// The reduction header: the built-in reducers and the kernel templates.
pub const REDUCE_HEADER: &str = include_str!("../include/reduce.cuh");
/// Threads per block of the row and column kernels (the `__launch_bounds__`).
pub const REDUCE_BLOCK: u32 = 256;

/// A reducer struct template instantiated for one accumulate dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReduceFn<'a> {
    /// Template name (`tops_red_sum`).
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
            let (tag, template) = match pass {
                ReducePass::Rows => ("rows", "tops_reduce_rows"),
                ReducePass::Columns => ("columns", "tops_reduce_columns"),
            };
            let name = format!("tops_reduce_{tag}__{}__{}__{}__{}", r.name, i.tag, CType::of(r.compute).tag, out.tag);
            let body = format!(
                "extern \"C\" __global__ void __launch_bounds__({REDUCE_BLOCK}) {name}(tops_reduce_args a) {{\n\
                 \x20   {template}<{reducer}, {}, {}>(a);\n}}\n",
                i.name, out.name
            );
            (name, body)
        }
        None => {
            let name = format!("tops_reduce_finish__{}__{}__{}", r.name, CType::of(r.compute).tag, out.tag);
            let body = format!(
                "extern \"C\" __global__ void {name}(tops_reduce_args a) {{\n\
                 \x20   tops_reduce_finish<{reducer}, {}>(a);\n}}\n",
                out.name
            );
            (name, body)
        }
    };
    let mut device_fns = vec![("tops_reduce_header".to_string(), REDUCE_HEADER.to_string())];
    if !r.source.is_empty() {
        device_fns.push((r.name.to_string(), r.source.to_string()));
    }
    Ok(ReduceKernelText { name, kernel, device_fns })
}
