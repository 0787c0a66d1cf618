//! `spmm`/`spmv` of CSR tensors on `Device::Cuda` (issue 34's products on both devices):
//! random CSR × dense products of every float dtype (m, n, k including 0 and 1, empty rows,
//! a COO operand converted by the product, strided dense operands, the `_out` forms) equal
//! the same calls on the CPU tensors bit for bit; invalid calls are `Err` on both devices;
//! corrupt components handed to the device's step directly (the constructors refuse them)
//! are the CPU row's `Err` kinds.

use tensor_core::registry::sparse::CSR_SPMM;
use tensor_ops::prelude::*;

use super::cases::Rng;
use super::sparse::{assert_same, step};
use super::DEV;

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// `count` values of `dtype` with fractions, signs and zeros of both signs.
fn values(shape: &[usize], dtype: DType, rng: &mut Rng) -> Tensor {
    let count: usize = shape.iter().product();
    let v: Vec<f64> = (0..count)
        .map(|_| {
            let r = rng.next();
            match r % 6 {
                0 => -0.0,
                1 => ((r >> 8) % 1000) as f64 * 7.3 - 3650.0,
                _ => ((r >> 8) % 20001) as f64 / 64.0 - 156.25,
            }
        })
        // f16 scaled down (exactly) so products and sums stay finite: no inf or NaN bits
        .map(|x| if dtype == DType::F16 { x / 256.0 } else { x })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

/// A random CSR tensor `[m, k]` on the CPU (every third row empty, columns sorted and
/// distinct within a row, as the constructor's users make them).
fn random_csr(m: usize, k: usize, dtype: DType, rng: &mut Rng) -> Tensor {
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        if r % 3 != 1 {
            col.extend((0..k as i64).filter(|_| rng.below(3) == 0));
        }
        crow.push(col.len() as i64);
    }
    let nnz = col.len();
    let crow = Tensor::from_vec(crow, &[m + 1]).unwrap();
    let col = Tensor::from_vec(col, &[nnz]).unwrap();
    Tensor::sparse_csr(&crow, &col, &values(&[nnz], dtype, rng), &[m, k]).unwrap()
}

/// spmm and spmv of random CSR tensors on the device equal the CPU's, bit for bit.
pub fn sparse_products_match_the_cpu() {
    let mut rng = Rng(0x5a17_0dd5);
    let sizes = [(0usize, 3usize, 2usize), (3, 0, 2), (4, 5, 0), (1, 1, 1), (7, 5, 1), (6, 4, 3), (20, 17, 33)];
    for dtype in FLOATS {
        for (m, k, n) in sizes {
            let what = format!("{dtype} m {m} k {k} n {n}");
            let a = random_csr(m, k, dtype, &mut rng);
            let b = values(&[k, n], dtype, &mut rng);
            let (ga, gb) = (a.to_device(DEV).unwrap(), b.to_device(DEV).unwrap());
            let want = a.spmm(&b).unwrap();
            assert_same(&ga.spmm(&gb).unwrap(), &want, &format!("{what}: spmm"));
            // a COO operand (converted by the product), a transposed dense operand, `_out`
            let coo = ga.to_sparse_coo().unwrap();
            assert_same(&coo.spmm(&gb).unwrap(), &want, &format!("{what}: spmm of COO"));
            let bt = values(&[n, k], dtype, &mut rng);
            let gbt = bt.to_device(DEV).unwrap().t().unwrap();
            assert_same(&ga.spmm(&gbt).unwrap(), &a.spmm(&bt.t().unwrap()).unwrap(), &format!("{what}: strided"));
            let out = Tensor::zeros(&[m, n], dtype, DEV).unwrap();
            ga.spmm_out(&gb, &out).unwrap();
            assert_same(&out, &want, &format!("{what}: spmm_out"));
            let x = values(&[k], dtype, &mut rng);
            let gx = x.to_device(DEV).unwrap();
            assert_same(&ga.spmv(&gx).unwrap(), &a.spmv(&x).unwrap(), &format!("{what}: spmv"));
        }
    }
}

/// Invalid products are `Err` on both devices, and corrupt components given to the
/// device's step are the CPU row's errors.
pub fn sparse_products_refuse_what_the_cpu_refuses() {
    let mut rng = Rng(0xbad_5a17);
    let a = random_csr(4, 5, DType::F32, &mut rng);
    let ga = a.to_device(DEV).unwrap();
    let cases: [(&str, Tensor); 4] = [
        ("wrong k", values(&[4, 2], DType::F32, &mut rng)),
        ("another dtype", values(&[5, 2], DType::F64, &mut rng)),
        ("integer", Tensor::ones(&[5, 2], DType::I32, Device::Cpu).unwrap()),
        ("rank 3", values(&[5, 2, 1], DType::F32, &mut rng)),
    ];
    for (what, b) in &cases {
        let gb = b.to_device(DEV).unwrap();
        assert!(a.spmm(b).is_err(), "{what}: the CPU accepts it");
        assert!(ga.spmm(&gb).is_err(), "{what}: the device accepts it");
    }
    assert!(ga.spmm(&values(&[5, 2], DType::F32, &mut rng)).is_err(), "two devices");
    // corrupt components, directly
    let on = |v: Vec<i64>| {
        let n = v.len();
        Tensor::from_vec(v, &[n]).unwrap().to_device(DEV).unwrap()
    };
    let corrupt: [(Vec<i64>, Vec<i64>, bool); 5] = [
        (vec![0, 1], vec![3], true),
        (vec![0, 1], vec![-1], true),
        (vec![0, 1, 0, 1], vec![0], true),
        (vec![1, 1], vec![0], false),
        (vec![0, 0], vec![0], false),
    ];
    for dtype in FLOATS {
        for n in [1, 3] {
            for (crow, col, bounds) in &corrupt {
                let (m, nnz) = (crow.len() - 1, col.len());
                let vals = Tensor::ones(&[nnz], dtype, DEV).unwrap();
                let dense = Tensor::ones(&[3, n], dtype, DEV).unwrap();
                let out = Tensor::zeros(&[m, n], dtype, DEV).unwrap();
                let r = step(&CSR_SPMM, &out, &[&on(crow.clone()), &on(col.clone()), &vals, &dense], &[]);
                let ok = match r {
                    Err(tensor_core::Error::OutOfBounds { .. }) => *bounds,
                    Err(tensor_core::Error::InvalidArgument { .. }) => !bounds,
                    _ => false,
                };
                assert!(ok, "{dtype} n {n} crow {crow:?} col {col:?}: {r:?}");
            }
        }
    }
}
