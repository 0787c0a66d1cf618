//! The bench cases through ndarray 0.17, written the way its users would write them
//! (single-threaded: ndarray's arithmetic does not use threads).

use half::f16;
use ndarray::{s, ArrayD, Axis, IxDyn, Zip};
use std::hint::black_box;
use std::ops::Add;
use tensor_benches::cases::{Case, Op};
use tensor_benches::data::{host_vec, BenchElem};
use tensor_ops::DType;

/// One prepared call.
pub type PeerCall = Box<dyn FnMut()>;

fn arr<T>(v: Vec<T>, shape: &[usize]) -> Option<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(shape), v).ok()
}

/// Cases every element type supports.
fn generic<T: BenchElem + Add<Output = T>>(case: &Case) -> Option<PeerCall> {
    let fill = T::fill_value();
    let shape = case.input_shape();
    let n: usize = shape.iter().product();
    let mk = |s: &[usize]| arr(host_vec::<T>(s.iter().product()), s);
    let out = || arr(vec![fill; case.elems()], &case.output_shape());
    Some(match case.op {
        Op::Copy => {
            let (a, mut o) = (mk(&shape)?, out()?);
            Box::new(move || o.assign(&a))
        }
        Op::Transpose => {
            let a = mk(&shape)?;
            Box::new(move || {
                black_box(a.t().as_standard_layout().into_owned());
            })
        }
        Op::Permute => {
            let a = mk(&shape)?;
            Box::new(move || {
                black_box(a.view().permuted_axes(IxDyn(&[2, 0, 1])).as_standard_layout().into_owned());
            })
        }
        Op::SliceCols => {
            let a = mk(&shape)?.into_dimensionality::<ndarray::Ix2>().ok()?;
            Box::new(move || {
                black_box(a.slice(s![.., ..;2]).as_standard_layout().into_owned());
            })
        }
        Op::Fill => {
            let mut o = arr(vec![fill; n], &shape)?;
            Box::new(move || o.fill(fill))
        }
        Op::AddNew => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            Box::new(move || {
                black_box(&a + &b);
            })
        }
        Op::AddOut => {
            let (a, b, mut o) = (mk(&shape)?, mk(&shape)?, out()?);
            Box::new(move || Zip::from(&mut o).and(&a).and(&b).for_each(|o, &x, &y| *o = x + y))
        }
        Op::AddTransposed => {
            let a = mk(&shape)?;
            let bs = mk(&[shape[1], shape[0]])?;
            Box::new(move || {
                black_box(&a + &bs.t());
            })
        }
        _ => return None,
    })
}

/// Float-only cases (f32).
fn unary_f32(case: &Case, v: Vec<f32>) -> Option<PeerCall> {
    let a = arr(v, &case.input_shape())?;
    let mut o = ArrayD::<f32>::zeros(IxDyn(&case.output_shape()));
    Some(match case.op {
        Op::ExpNew => Box::new(move || {
            black_box(a.mapv(f32::exp));
        }),
        Op::ReluNew => Box::new(move || {
            black_box(a.mapv(|x| x.max(0.0)));
        }),
        Op::ExpOut => Box::new(move || Zip::from(&mut o).and(&a).for_each(|o, &x| *o = x.exp())),
        Op::ReluOut => Box::new(move || Zip::from(&mut o).and(&a).for_each(|o, &x| *o = x.max(0.0))),
        Op::SiluNew => Box::new(move || {
            black_box(a.mapv(|x| x / (1.0 + (-x).exp())));
        }),
        // The fused cases: hand-written one-pass `Zip` (the Rust peer to beat) ...
        Op::FusedTriad => {
            let (b, c) = (a.mapv(|x| 0.5 * x), a.mapv(|x| x - 1.0));
            Box::new(move || {
                black_box(Zip::from(&a).and(&b).and(&c).par_map_collect(|&x, &y, &z| (x * y + z).max(0.0)));
            })
        }
        Op::FusedSqDiffSum => {
            let b = a.mapv(|x| 0.5 * x);
            Box::new(move || {
                black_box(Zip::from(&a).and(&b).par_fold(|| 0.0f32, |s, &x, &y| s + (x - y) * (x - y), |p, q| p + q));
            })
        }
        // ... and the eager chains as ndarray's users write them.
        Op::EagerTriad => {
            let (b, c) = (a.mapv(|x| 0.5 * x), a.mapv(|x| x - 1.0));
            Box::new(move || {
                black_box((&a * &b + &c).mapv(|x| x.max(0.0)));
            })
        }
        Op::EagerSqDiffSum => {
            let b = a.mapv(|x| 0.5 * x);
            Box::new(move || {
                let d = &a - &b;
                black_box((&d * &d).sum());
            })
        }
        // Reductions as ndarray's users write them: `sum_axis`, `fold_axis`, `var_axis`.
        Op::SumLast => Box::new(move || {
            black_box(a.sum_axis(Axis(1)));
        }),
        Op::SumFirst => Box::new(move || {
            black_box(a.sum_axis(Axis(0)));
        }),
        Op::AmaxLast => Box::new(move || {
            black_box(a.fold_axis(Axis(1), f32::NEG_INFINITY, |m, &x| m.max(x)));
        }),
        Op::AmaxFirst => Box::new(move || {
            black_box(a.fold_axis(Axis(0), f32::NEG_INFINITY, |m, &x| m.max(x)));
        }),
        Op::VarLast => Box::new(move || {
            black_box(a.var_axis(Axis(1), 1.0));
        }),
        Op::VarFirst => Box::new(move || {
            black_box(a.var_axis(Axis(0), 1.0));
        }),
        _ => return None,
    })
}

/// Prepares `case` through ndarray; `None` when ndarray has no such operation or dtype.
pub fn prepare(case: &Case) -> Option<PeerCall> {
    match case.dtype {
        DType::F32 => generic::<f32>(case).or_else(|| unary_f32(case, host_vec(case.elems()))),
        DType::F16 => generic::<f16>(case),
        DType::I64 => generic::<i64>(case),
        _ => None,
    }
}

/// A new-output add of two `[n]` f32 arrays.
pub fn latency(n: usize) -> PeerCall {
    let a = ndarray::Array1::<f32>::from_shape_fn(n, tensor_benches::data::value);
    let b = a.clone();
    Box::new(move || {
        black_box(&a + &b);
    })
}
