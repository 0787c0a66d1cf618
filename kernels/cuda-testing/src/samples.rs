//! Representative `__device__` functions written the way `#[tensor_op]` emits them, for
//! checking the kernel templates without the macro (tests and the CI compile check).

use tensor_core::DType;

use tensor_kernels_cuda::codegen::DeviceFn;
use tensor_kernels_cuda::ctype::CType;

/// One sample op instantiated for one dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleFn {
    /// Op name (`"add"`).
    pub op: &'static str,
    /// Row dtype (inputs are stored as it).
    pub dtype: DType,
    /// Number of tensor inputs.
    pub arity: usize,
    /// Device function name.
    pub name: String,
    /// Its CUDA C source.
    pub source: String,
    /// Compute dtype.
    pub compute: DType,
    /// Output dtype.
    pub output: DType,
    /// Number of parameters (declared `float slope`; passed as `tops_param`s).
    pub nparams: usize,
}

impl SampleFn {
    /// The device function.
    pub fn func(&self) -> DeviceFn<'_> {
        DeviceFn {
            name: &self.name,
            source: &self.source,
            compute: self.compute,
            output: self.output,
            nparams: self.nparams,
        }
    }
}

/// Sample ops: `(name, arity, nparams, floats only, bool output, body)`; the body uses `a`,
/// `b`, `c` (inputs), `slope` (parameter) and `T` (compute type).
const OPS: &[(&str, usize, usize, bool, bool, &str)] = &[
    ("add", 2, 0, false, false, "tops_add(a, b)"),
    ("relu", 1, 0, false, false, "tops_select(tops_gt(a, tops_zero<T>()), a, tops_zero<T>())"),
    ("lt", 2, 0, false, true, "tops_lt(a, b)"),
    ("fma", 3, 0, false, false, "tops_add(tops_mul(a, b), c)"),
    ("exp", 1, 0, true, false, "tops_exp(a)"),
    (
        "leaky_relu",
        1,
        1,
        true,
        false,
        "tops_select(tops_gt(a, tops_zero<T>()), a, tops_mul(a, tops_from_f32<T>(slope)))",
    ),
];

/// Every sample op for every dtype it supports.
pub fn sample_functions() -> Vec<SampleFn> {
    let mut v = Vec::new();
    for &(op, arity, nparams, float_only, bool_out, body) in OPS {
        for dtype in DType::ALL {
            if float_only && !dtype.is_float() {
                continue;
            }
            let compute = dtype.compute();
            let output = if bool_out { DType::Bool } else { compute };
            let c = CType::of(compute).name;
            let name = format!("tensor_op_{op}_{}", dtype.name());
            let mut params: Vec<String> = ["a", "b", "c"][..arity].iter().map(|p| format!("{c} {p}")).collect();
            if nparams == 1 {
                params.push("float slope".into());
            }
            let source = format!(
                "__device__ __forceinline__ {} {name}({}) {{ typedef {c} T; return {body}; }}",
                CType::of(output).name,
                params.join(", ")
            );
            v.push(SampleFn { op, dtype, arity, name, source, compute, output, nparams });
        }
    }
    v
}
