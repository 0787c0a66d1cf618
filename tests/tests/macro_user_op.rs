//! A user-defined `#[tensor_op]` outside the `ops` crate: it registers itself (CPU and CUDA
//! rows for every listed dtype) and runs like a built-in op.

use tensor_core::registry::KernelRow;
use tensor_kernels_cpu::kernel::MapKernel;
use tensor_kernels_cuda::kernel::CudaMapKernel;
use tensor_ops::prelude::*;
use tensor_ops::tensor_core::DeviceKind;

/// Leaky ReLU: `x` when positive, else `slope * x`.
#[tensor_op(dtypes = [float])]
pub fn leaky_relu<T: Float>(x: T, #[param] slope: f32) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::from_f32(slope)
    }
}

/// Whether `lo <= x <= hi`.
#[tensor_op(dtypes = [numeric])]
pub fn between<T: Num>(x: T, #[param] lo: f64, #[param] hi: f64) -> bool {
    x >= T::from_f64(lo) && !(x > T::from_f64(hi))
}

/// `a * x + b + k`, three inputs and an integer param.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn axpbk<T: Num>(a: T, x: T, b: T, #[param] k: i64) -> T {
    let y: T = a * x;
    y + b + T::from_i64(k)
}

/// `x * x + 1`, registered under another name.
#[tensor_op(name = "user_square_plus_one", dtypes = [i32, f32])]
fn square_plus_one<T>(x: T) -> T {
    x * x + 1
}

const FLOATS: [DType; 6] = [DType::F8E4M3, DType::F8E5M2, DType::F16, DType::BF16, DType::F32, DType::F64];
const INTS: [DType; 5] = [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64];

fn rows(op: &str, device: DeviceKind) -> Vec<DType> {
    tensor_core::registry()
        .row_set(op, device, Layout::Strided)
        .unwrap_or_else(|| panic!("no {device:?} rows for {op}"))
        .dtypes()
}

fn row(op: &str, device: DeviceKind, dtype: DType) -> &'static KernelRow {
    tensor_core::registry()
        .row_set(op, device, Layout::Strided)
        .and_then(|s| s.get(dtype))
        .unwrap_or_else(|| panic!("no {device:?} {dtype} row for {op}"))
}

#[test]
fn user_ops_have_rows_under_the_sparse_layouts() {
    // The same definitions register rows keyed by the sparse layouts, with the strided
    // rows' dtypes, on both devices: sparse calls dispatch on them.
    for op in ["leaky_relu", "axpbk", "user_square_plus_one", "relu", "add", "mul"] {
        for device in [DeviceKind::Cpu, DeviceKind::Cuda] {
            for layout in [Layout::SparseCoo, Layout::SparseCsr] {
                let set = tensor_core::registry()
                    .row_set(op, device, layout)
                    .unwrap_or_else(|| panic!("no {device:?} {layout:?} rows for {op}"));
                // (quantized tensors are strided only: their rows are not under the sparse layouts)
                let plain: Vec<DType> = rows(op, device).into_iter().filter(|d| !d.is_quantized()).collect();
                assert_eq!(set.dtypes(), plain, "{op} {device:?} {layout:?}");
            }
        }
    }
    // and a user op runs on a sparse tensor through them
    let i = Tensor::from_vec(vec![0i64, 1, 2, 0], &[2, 2]).unwrap();
    let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![-2f32, 3.], &[2]).unwrap(), &[2, 3]).unwrap();
    let y = leaky_relu(&s, 0.5).unwrap();
    assert_eq!(y.layout(), Layout::SparseCoo);
    assert_eq!(y.to_dense().unwrap().to_vec::<f32>().unwrap(), vec![0., 0., -1., 3., 0., 0.]);
}

#[test]
fn user_ops_are_registered_for_cpu_and_cuda() {
    let numeric: Vec<DType> = INTS.iter().chain(FLOATS.iter()).copied().collect();
    let cases: [(&str, Vec<DType>); 4] = [
        ("leaky_relu", FLOATS.to_vec()),
        ("between", numeric),
        ("axpbk", INTS.iter().copied().chain([DType::F32, DType::F64]).collect()),
        ("user_square_plus_one", vec![DType::I32, DType::F32]),
    ];
    for (op, dtypes) in cases {
        assert_eq!(rows(op, DeviceKind::Cpu), dtypes, "{op} cpu");
        assert_eq!(rows(op, DeviceKind::Cuda), dtypes, "{op} cuda");
        for &d in &dtypes {
            let bool_out = op == "between";
            let want_out = if bool_out { DType::Bool } else { d.compute() };
            let cpu = row(op, DeviceKind::Cpu, d).kernel;
            match cpu.as_any().downcast_ref::<MapKernel>() {
                Some(k) => assert_eq!((k.compute, k.output), (d.compute(), want_out), "{op} {d}"),
                None => panic!("{op} {d}: expected a CPU map kernel, got {cpu:?}"),
            }
            let cuda = row(op, DeviceKind::Cuda, d).kernel;
            match cuda.as_any().downcast_ref::<CudaMapKernel>() {
                Some(k) => {
                    assert_eq!((k.compute, k.output), (d.compute(), want_out), "{op} {d}");
                    assert_eq!(k.function, format!("tensor_op_{op}_{d}"));
                    assert!(k.source.contains(&format!(" {}(", k.function)), "{}", k.source);
                }
                None => panic!("{op} {d}: expected a CUDA map kernel, got {cuda:?}"),
            }
        }
    }
    let spec = tensor_ops::registry().op("leaky_relu").unwrap();
    assert_eq!((spec.arity, spec.params, spec.bool_output, spec.float_only), (1, &["slope"][..], false, true));
    assert_eq!(spec.doc, "Leaky ReLU: `x` when positive, else `slope * x`.");
    let spec = tensor_ops::registry().op("between").unwrap();
    assert_eq!((spec.arity, spec.params, spec.bool_output, spec.float_only), (1, &["lo", "hi"][..], true, false));
    let spec = tensor_ops::registry().op("axpbk").unwrap();
    assert_eq!((spec.arity, spec.params), (3, &["k"][..]));
}

#[test]
fn cuda_sources_are_exposed() {
    let (d, src) = *__tensor_op_leaky_relu::CUDA_SOURCES.iter().find(|(d, _)| *d == DType::F16).unwrap();
    assert_eq!(d, DType::F16);
    // the function behind an include guard (so composed sources may splice it more than once)
    assert!(src.starts_with("#ifndef TOPS_FN_tensor_op_leaky_relu_f16_") && src.ends_with("#endif\n"), "{src}");
    assert!(
        src.contains(
            "__device__ __forceinline__ float tensor_op_leaky_relu_f16(float x, float slope) {\n    return (tops_gt(x, \
             tops_cast<float>(0)) ? x : tops_mul(x, tops_cast<float>(slope)));\n}\n"
        ),
        "{src}"
    );
    assert_eq!(__tensor_op_leaky_relu::CUDA_FUNCTIONS.last(), Some(&(DType::F64, "tensor_op_leaky_relu_f64")));
    let (_, src) = __tensor_op_between::CUDA_SOURCES.iter().find(|(d, _)| *d == DType::U8).unwrap();
    assert!(src.contains("__device__ __forceinline__ bool tensor_op_between_u8(unsigned char x, double lo, double hi)"));
    assert_eq!(__tensor_op_square_plus_one::DTYPES, &[DType::I32, DType::F32]);
}

/// Values of `t` widened to f64.
fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// A contiguous tensor of `dtype` holding `vals` (cast from f64).
fn tensor(vals: &[f64], dtype: DType) -> Tensor {
    Tensor::from_vec(vals.to_vec(), &[vals.len()]).unwrap().to_dtype(dtype).unwrap()
}

fn tolerance(d: DType) -> f64 {
    match d {
        // one rounding of 3 (E4M3) or 2 (E5M2) mantissa bits
        DType::F8E4M3 => 0.07,
        DType::F8E5M2 => 0.13,
        DType::F16 => 2e-3,
        DType::BF16 => 1e-2,
        DType::F32 => 1e-6,
        _ => 1e-12,
    }
}

fn assert_close(got: &[f64], want: &[f64], d: DType, what: &str) {
    assert_eq!(got.len(), want.len(), "{what} {d}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tolerance(d) * w.abs().max(1.0), "{what} {d}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn leaky_relu_matches_reference_on_every_dtype() {
    let xs: Vec<f64> = (0..70).map(|i| (i as f64 - 35.0) * 0.37).collect();
    for d in FLOATS {
        let x = tensor(&xs, d);
        let stored = f64s(&x);
        let want: Vec<f64> = stored.iter().map(|&v| if v > 0.0 { v } else { v * 0.1f32 as f64 }).collect();
        let y = leaky_relu(&x, 0.1).unwrap();
        assert_eq!(y.dtype(), d);
        assert_close(&f64s(&y), &want, d, "leaky_relu");

        let out = tensor(&vec![f64::NAN; xs.len()], d);
        leaky_relu_out(&x, 0.1, &out).unwrap();
        assert_close(&f64s(&out), &want, d, "leaky_relu_out");

        leaky_relu_(&x, 0.1).unwrap();
        assert_close(&f64s(&x), &want, d, "leaky_relu_");
    }
}

#[test]
fn between_matches_reference_on_every_dtype() {
    let xs: Vec<f64> = (0..40).map(|i| i as f64).collect();
    for d in INTS.into_iter().chain(FLOATS) {
        let x = tensor(&xs, d);
        let y = between(&x, 3.0, 17.5).unwrap();
        assert_eq!(y.dtype(), DType::Bool, "{d}");
        // the values the tensor holds (E5M2 rounds 18 to 16)
        let want: Vec<bool> = f64s(&x).iter().map(|&v| (3.0..=17.5).contains(&v)).collect();
        assert_eq!(y.to_vec::<bool>().unwrap(), want, "between {d}");
    }
}

#[test]
fn axpbk_matches_reference_on_every_dtype() {
    let a: Vec<f64> = (0..37).map(|i| (i % 6) as f64).collect();
    let x: Vec<f64> = (0..37).map(|i| (5 - i % 6) as f64).collect();
    let b: Vec<f64> = (0..37).map(|i| (i % 4) as f64).collect();
    let want: Vec<f64> = (0..37).map(|i| a[i] * x[i] + b[i] + 3.0).collect();
    for d in INTS.into_iter().chain([DType::F32, DType::F64]) {
        let y = axpbk(&tensor(&a, d), &tensor(&x, d), &tensor(&b, d), 3).unwrap();
        assert_eq!(y.dtype(), d);
        assert_eq!(f64s(&y), want, "axpbk {d}");
    }
}

#[test]
fn renamed_op_runs() {
    let xs: Vec<f64> = (0..20).map(|i| i as f64 - 10.0).collect();
    for d in [DType::I32, DType::F32] {
        let y = square_plus_one(&tensor(&xs, d)).unwrap();
        let want: Vec<f64> = xs.iter().map(|v| v * v + 1.0).collect();
        assert_eq!(f64s(&y), want, "{d}");
    }
}

/// An internal step, as the built-ins' `softmax_from_lse` is: `#[doc(hidden)]` marks its spec
/// internal, so listings for users leave it out.
#[doc(hidden)]
#[tensor_op(dtypes = [f32])]
pub fn hidden_step<T: Float>(x: T) -> T {
    x + T::one()
}

#[test]
fn user_listings_leave_out_internal_steps_and_keep_user_ops() {
    let reg = tensor_ops::registry();
    let all: Vec<&str> = reg.entries().into_iter().map(|e| e.0).collect();
    let users: Vec<&str> = reg.user_entries().into_iter().map(|e| e.0).collect();
    for internal in
        ["fused", "softmax_rows", "log_softmax_rows", "softmax_from_lse", "log_softmax_from_lse", "hidden_step"]
    {
        assert!(all.contains(&internal), "{internal} is registered");
        assert!(!users.contains(&internal), "{internal} is internal");
        assert!(reg.op(internal).unwrap().internal);
    }
    for user in ["add", "copy", "fill", "sum", "softmax", "leaky_relu"] {
        assert!(users.contains(&user), "{user} is listed for users");
        assert!(!reg.op(user).unwrap().internal);
    }
    // hidden or not, the op runs
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    assert_eq!(hidden_step(&t).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
}
