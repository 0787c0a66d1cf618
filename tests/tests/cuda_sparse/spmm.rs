//! `sparse_csr_spmm` (spmm/spmv) on the shim: random CSR × dense products of every float
//! dtype (m, n, k including 0 and 1, empty rows, repeated and unsorted columns, signed
//! zeros) equal bit for bit to a naive loop — each output element summed from zero over its
//! row's entries in order, products and sums rounded separately, f16/bf16 in f32 rounded
//! once — and to the CPU row run on the same components. Corrupt components (which the
//! constructors never make) are the CPU row's `Err`s, of the same kind.

use super::cases::Rng;
use super::ops::cpu_step;
use super::*;
use tensor_core::Device;

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// `count` values of `dtype` (as stored: read back through f64) with fractions, signs,
/// zeros of both signs and magnitudes that make sums depend on their order.
fn values(count: usize, shape: &[usize], dtype: DType, rng: &mut Rng) -> Tensor {
    let v: Vec<f64> = (0..count)
        .map(|_| {
            let r = rng.next();
            match r % 7 {
                0 => -0.0,
                1 => 0.0,
                2 => ((r >> 8) % 1000) as f64 * 0.001,
                3 => ((r >> 8) % 1000) as f64 * 7.3 - 3650.0,
                _ => ((r >> 8) % 20001) as f64 / 64.0 - 156.25,
            }
        })
        // f16 scaled down (exactly) so products and sums stay finite: no inf or NaN bits
        .map(|x| if dtype == DType::F16 { x / 256.0 } else { x })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

/// A random CSR `[m, k]`: row pointers, columns (repeats and any order within a row; every
/// third row empty), values of `dtype`.
fn random_csr(m: usize, k: usize, dtype: DType, rng: &mut Rng) -> (Tensor, Tensor, Tensor) {
    let mut crow = vec![0i64];
    let mut col = Vec::new();
    for r in 0..m {
        let len = if k == 0 || r % 3 == 1 { 0 } else { rng.below(2 * k as u64 + 1) as usize };
        col.extend((0..len).map(|_| rng.below(k as u64) as i64));
        crow.push(col.len() as i64);
    }
    let nnz = col.len();
    (Tensor::from_vec(crow, &[m + 1]).unwrap(), Tensor::from_vec(col, &[nnz]).unwrap(), values(nnz, &[nnz], dtype, rng))
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The naive product of the contract: each element from zero over its row's entries in
/// order, in f64 for f64 and in f32 otherwise (f16/bf16 widened exactly), then stored as
/// `dtype` (one rounding).
fn naive(crow: &Tensor, col: &Tensor, vals: &Tensor, dense: &Tensor, n: usize) -> Tensor {
    let (crow, col) = (crow.to_vec::<i64>().unwrap(), col.to_vec::<i64>().unwrap());
    let (v, d, dtype) = (f64s(vals), f64s(dense), vals.dtype());
    let m = crow.len() - 1;
    let entries = |r: usize| crow[r] as usize..crow[r + 1] as usize;
    if dtype == DType::F64 {
        let mut out = vec![0f64; m * n];
        for r in 0..m {
            for c in 0..n {
                let mut s = 0f64;
                for j in entries(r) {
                    s += v[j] * d[col[j] as usize * n + c];
                }
                out[r * n + c] = s;
            }
        }
        return Tensor::from_vec(out, &[m, n]).unwrap();
    }
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            let mut s = 0f32;
            for j in entries(r) {
                s += v[j] as f32 * d[col[j] as usize * n + c] as f32;
            }
            out[r * n + c] = s;
        }
    }
    Tensor::from_vec(out, &[m, n]).unwrap().to_dtype(dtype).unwrap()
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn csr_products_on_the_shim_match_a_naive_loop_and_the_cpu_for_every_float_dtype() {
    let e = host_exec();
    let mut rng = Rng(0x5eed_5a17);
    // the shim runs 3 blocks of 256 threads: the last two cases take several grid strides
    let sizes: [(usize, usize, usize); 13] = [
        (0, 3, 2),
        (3, 0, 2),
        (4, 5, 0),
        (0, 0, 0),
        (1, 1, 1),
        (7, 5, 1),
        (1, 9, 4),
        (6, 4, 3),
        (9, 7, 33),
        (40, 17, 5),
        (5, 6, 70),
        (300, 20, 7),
        (1000, 30, 1),
    ];
    for dtype in FLOATS {
        for &(m, k, n) in &sizes {
            let what = format!("{dtype} m {m} k {k} n {n}");
            let (crow, col, vals) = random_csr(m, k, dtype, &mut rng);
            let dense = values(k * n, &[k, n], dtype, &mut rng);
            let ins = [&crow, &col, &vals, &dense];
            let (got, want) = (empty(&[m, n], dtype), empty(&[m, n], dtype));
            step(&e, &CSR_SPMM, &got, &ins, &[]).unwrap_or_else(|err| panic!("{what}: {err}"));
            cpu_step(&CSR_SPMM, &want, &ins, &[]).unwrap_or_else(|err| panic!("{what}: the CPU: {err}"));
            let reference = naive(&crow, &col, &vals, &dense, n);
            assert!(f64s(&reference).iter().all(|x| x.is_finite()), "{what}: the case overflows");
            assert_eq!(bits(&got), bits(&reference), "{what}: against the naive loop");
            assert_eq!(bits(&got), bits(&want), "{what}: against the CPU row");
            // i32 index components: the same bits
            let (crow32, col32) = (crow.to_dtype(DType::I32).unwrap(), col.to_dtype(DType::I32).unwrap());
            let narrow = empty(&[m, n], dtype);
            step(&e, &CSR_SPMM, &narrow, &[&crow32, &col32, &vals, &dense], &[])
                .unwrap_or_else(|err| panic!("{what} i32: {err}"));
            assert_eq!(bits(&narrow), bits(&got), "{what}: i32 components");
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn corrupt_csr_components_are_the_cpu_errors() {
    let e = host_exec();
    let run = |dev: bool, crow: Vec<i64>, col: Vec<i64>, k: usize, n: usize, dtype: DType| {
        let (m, nnz) = (crow.len() - 1, col.len());
        let crow = Tensor::from_vec(crow, &[m + 1]).unwrap();
        let col = Tensor::from_vec(col, &[nnz]).unwrap();
        let vals = Tensor::ones(&[nnz], dtype, Device::Cpu).unwrap();
        let dense = Tensor::ones(&[k, n], dtype, Device::Cpu).unwrap();
        let out = empty(&[m, n], dtype);
        let ins = [&crow, &col, &vals, &dense];
        if dev {
            step(&e, &CSR_SPMM, &out, &ins, &[])
        } else {
            cpu_step(&CSR_SPMM, &out, &ins, &[])
        }
    };
    let kind = |r: &Result<()>| r.as_ref().map_err(std::mem::discriminant).map(|_| ());
    let corrupt: [(Vec<i64>, Vec<i64>); 9] = [
        (vec![0, 1], vec![3]),             // a column equal to k
        (vec![0, 1], vec![-1]),            // a negative column
        (vec![0, 1], vec![i64::MAX]),      // a huge one
        (vec![1, 1], vec![0]),             // crow not from 0
        (vec![0, 0], vec![0]),             // not ending at nnz
        (vec![0, 1, 0, 1], vec![0]),       // falling
        (vec![0, -5, 1], vec![0]),         // negative
        (vec![0, 9, 1], vec![0]),          // past nnz in the middle
        (vec![0, 2, 1, 3], vec![0, 1, 7]), // falling and a bad column
    ];
    for dtype in FLOATS {
        for n in [1, 3, 40] {
            for (crow, col) in &corrupt {
                let what = format!("{dtype} n {n} crow {crow:?} col {col:?}");
                let got = run(true, crow.clone(), col.clone(), 3, n, dtype);
                let want = run(false, crow.clone(), col.clone(), 3, n, dtype);
                assert!(want.is_err(), "{what}: the CPU accepts it");
                assert_eq!(kind(&got), kind(&want), "{what}: {got:?} vs the CPU's {want:?}");
            }
        }
        // with no output elements only crow's ends are checked, on both
        for (crow, col) in [(vec![0i64, 9, 1], vec![0i64]), (vec![0, 1], vec![5]), (vec![1, 1], vec![0])] {
            let (got, want) = (run(true, crow.clone(), col.clone(), 3, 0, dtype), run(false, crow, col, 3, 0, dtype));
            assert_eq!(kind(&got), kind(&want), "{dtype} n 0: {got:?} vs the CPU's {want:?}");
        }
        // a long product over several blocks with one bad column in the middle
        let (m, per) = (600, 5);
        let crow: Vec<i64> = (0..=m).map(|r| (r * per) as i64).collect();
        let mut col: Vec<i64> = (0..m * per).map(|j| (j % 64) as i64).collect();
        assert!(run(true, crow.clone(), col.clone(), 64, 2, dtype).is_ok(), "{dtype}: the valid one");
        col[m * per / 2 + 3] = 64;
        for n in [1, 2] {
            let got = run(true, crow.clone(), col.clone(), 64, n, dtype);
            assert!(matches!(got, Err(Error::OutOfBounds { .. })), "{dtype} n {n}: {got:?}");
        }
    }
    // dtypes: integer values, a dense operand of another dtype, I32 row pointers
    let (crow, col) = (i64s(vec![0, 1]), i64s(vec![0]));
    let f = |d: DType, shape: &[usize]| Tensor::ones(shape, d, Device::Cpu).unwrap();
    let bad: [[Tensor; 4]; 3] = [
        [crow.clone(), col.clone(), f(DType::I32, &[1]), f(DType::I32, &[1, 1])],
        [crow.clone(), col.clone(), f(DType::F32, &[1]), f(DType::F64, &[1, 1])],
        [crow.to_dtype(DType::I32).unwrap(), col, f(DType::F32, &[1]), f(DType::F32, &[1, 1])],
    ];
    for ins in &bad {
        let out = empty(&[1, 1], ins[2].dtype());
        let r = step(&e, &CSR_SPMM, &out, &[&ins[0], &ins[1], &ins[2], &ins[3]], &[]);
        assert!(r.is_err(), "{:?}: {r:?}", ins.iter().map(|t| t.dtype()).collect::<Vec<_>>());
    }
}

fn i64s(v: Vec<i64>) -> Tensor {
    let n = v.len();
    Tensor::from_vec(v, &[n]).unwrap()
}
