//! The CUDA rows of the ops' steps on the shim — `sparse_coo_lookup`, `sparse_gather_rows`,
//! `sparse_dense_gather` (binary ops), `sparse_segment_extreme` (amax/amin) and
//! `sparse_segment_softmax` — for every dtype over the random COO cases: each equal bit for
//! bit to the CPU row run on the same inputs, and checked against a naive reference (a
//! linear search, rows copied by hand, a per-segment fold, the f64 softmax model). Bad
//! positions and indices are the CPU rows' `Err`s and write nothing out of bounds.

use super::*;
use std::collections::BTreeMap;
use tensor_core::registry::{CallExtra, PreparedCall};
use tensor_core::Device;

/// Runs step `spec`'s CPU row (keyed by `out`'s dtype) on CPU tensors.
pub(super) fn cpu_step(spec: &'static OpSpec, out: &Tensor, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    let row = inventory::iter::<KernelRow>
        .into_iter()
        .find(|r| std::ptr::eq(r.op, spec) && r.device == DeviceKind::Cpu && r.dtype == out.dtype())
        .unwrap_or_else(|| panic!("no CPU row of {} for {}", spec.name, out.dtype()));
    let k = row.kernel.as_any().downcast_ref::<ComponentKernel>().expect("a component kernel");
    let inputs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    with_raw(out, &inputs, |o, ins| {
        let call =
            PreparedCall { op: spec, outputs: std::slice::from_ref(o), inputs: ins, params, extra: CallExtra::None };
        // SAFETY: the operands are the locked host storages of live CPU tensors; the output
        // is a tensor of its own.
        unsafe { (k.func)(&call) }
    })
}

/// `spec` on the shim and on the CPU into fresh outputs of `shape`/`dtype`: both results.
fn both(
    e: &HostExec,
    spec: &'static OpSpec,
    shape: &[usize],
    dtype: DType,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> (Tensor, Tensor) {
    let (got, want) = (empty(shape, dtype), empty(shape, dtype));
    step(e, spec, &got, inputs, params).unwrap();
    cpu_step(spec, &want, inputs, params).unwrap();
    (got, want)
}

/// Bits with every NaN as one value (NaN payloads are not part of the contract).
fn canon(t: &Tensor) -> Vec<u64> {
    let f = t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    bits(t).into_iter().zip(f).map(|(b, x)| if x.is_nan() { u64::MAX } else { b }).collect()
}

fn i64s(v: Vec<i64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

/// The entries of each segment, in sorted order.
fn groups(perm: &[i64], seg: &[i64]) -> Vec<Vec<usize>> {
    let mut g: Vec<Vec<usize>> = Vec::new();
    for (&j, &s) in perm.iter().zip(seg) {
        if g.len() <= s as usize {
            g.push(Vec::new());
        }
        g[s as usize].push(j as usize);
    }
    g
}

/// The sorted permutation and the segment of each sorted entry (naive: as `coalesce`'s).
fn naive_segments(c: &Case) -> (Vec<i64>, Vec<i64>) {
    let perm = naive_order(c);
    let mut seg = Vec::with_capacity(perm.len());
    for (k, &j) in perm.iter().enumerate() {
        let s = match k {
            0 => 0,
            _ if c.column(perm[k - 1] as usize) == c.column(j as usize) => seg[k - 1],
            _ => seg[k - 1] + 1,
        };
        seg.push(s);
    }
    (perm, seg)
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn lookups_and_gathers_on_the_shim_match_the_cpu_for_every_dtype() {
    let e = host_exec();
    let mut rng = cases::Rng(0x10c4);
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        for c in cases(dtype, 0x9a7 + k as u64) {
            let what = format!("{dtype} {:?} sd {} nnz {}", c.shape, c.sd, c.nnz());
            let uniq = naive_unique(&c);
            let m = uniq.len() / c.sd;
            let table = i64s(uniq.clone(), &[c.sd, m]);
            // queries: the entries' own columns (all found) and random ones (some absent)
            let other = Case::random(&c.shape, c.sd, dtype, c.nnz() + 3, &mut rng);
            for q in [c.clone(), other] {
                let n = q.nnz();
                let (got, want) = both(&e, &COO_LOOKUP, &[n], DType::I64, &[&table, &q.indices()], &[]);
                let found = got.to_vec::<i64>().unwrap();
                assert_eq!(found, want.to_vec::<i64>().unwrap(), "{what}: lookup vs the CPU");
                let places: BTreeMap<Vec<i64>, i64> =
                    (0..m).map(|t| ((0..c.sd).map(|d| uniq[d * m + t]).collect(), t as i64 + 1)).collect();
                let naive: Vec<i64> = (0..n).map(|j| places.get(&q.column(j)).copied().unwrap_or(0)).collect();
                assert_eq!(found, naive, "{what}: lookup vs a linear search");
                // the source's rows at the found places (base 1: 0 is a zero row)
                let src = c.values();
                let row: usize = c.shape[c.sd..].iter().product();
                let src_rows = c.nnz();
                let positions = i64s(found.iter().map(|&f| f.min(src_rows as i64)).collect(), &[n]);
                let shape: Vec<usize> = std::iter::once(n).chain(c.shape[c.sd..].iter().copied()).collect();
                let (g, w) = both(&e, &GATHER_ROWS, &shape, dtype, &[&src, &positions], &[Scalar::Int(1)]);
                assert_eq!(bits(&g), bits(&w), "{what}: gather_rows vs the CPU");
                let sb = bits(&src);
                let naive: Vec<u64> = positions
                    .to_vec::<i64>()
                    .unwrap()
                    .into_iter()
                    .flat_map(
                        |p| if p == 0 { vec![0; row] } else { sb[(p as usize - 1) * row..p as usize * row].to_vec() },
                    )
                    .collect();
                assert_eq!(bits(&g), naive, "{what}: gather_rows vs rows copied by hand");
                // the dense tensor's slices at the query columns
                let dense = c.tensor().to_dense().unwrap();
                let (g, w) = both(&e, &DENSE_GATHER, &shape, dtype, &[&dense, &q.indices()], &[]);
                assert_eq!(bits(&g), bits(&w), "{what}: dense_gather vs the CPU");
                let db = bits(&dense);
                let naive: Vec<u64> = (0..n)
                    .flat_map(|j| {
                        let col = q.column(j);
                        let p = (0..c.sd).fold(0usize, |acc, d| acc * c.shape[d] + col[d] as usize);
                        db[p * row..(p + 1) * row].to_vec()
                    })
                    .collect();
                assert_eq!(bits(&g), naive, "{what}: dense_gather vs slices by hand");
            }
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn segment_extremes_and_softmax_on_the_shim_match_the_cpu_for_every_dtype() {
    let e = host_exec();
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        for mut c in cases(dtype, 0x5e6 + k as u64) {
            if dtype.is_float() {
                // a NaN now and then: it propagates through max/min and softmax
                c.vals.iter_mut().step_by(23).for_each(|v| *v = f64::NAN);
            }
            let what = format!("{dtype} {:?} sd {} nnz {}", c.shape, c.sd, c.nnz());
            let (perm, seg) = naive_segments(&c);
            let nseg = seg.last().map_or(0, |&s| s as usize + 1);
            let (nnz, vals) = (c.nnz(), c.values());
            let (p, s) = (i64s(perm.clone(), &[nnz]), i64s(seg.clone(), &[nnz]));
            let row: usize = c.shape[c.sd..].iter().product();
            let shape: Vec<usize> = std::iter::once(nseg).chain(c.shape[c.sd..].iter().copied()).collect();
            let v = vals.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            let groups = groups(&perm, &seg);
            for (kind, group) in [(0i64, 0i64), (1, 0), (0, 2), (1, 3), (0, i64::MAX)] {
                let params = [Scalar::Int(kind), Scalar::Int(group)];
                let (g, w) = both(&e, &SEGMENT_EXTREME, &shape, dtype, &[&vals, &p, &s], &params);
                assert_eq!(canon(&g), canon(&w), "{what}: extreme {kind} {group} vs the CPU");
                // naive: each segment's values (and a zero) folded in f64
                let got = g.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
                for (sg, want_row) in got.chunks(row.max(1)).enumerate().take(nseg) {
                    let members = &groups[sg];
                    for (col, &x) in want_row.iter().enumerate() {
                        let mut all: Vec<f64> = members.iter().map(|&j| v[j * row + col]).collect();
                        if (members.len() as i64) < group {
                            all.push(0.0);
                        }
                        let want = if all.iter().any(|y| y.is_nan()) {
                            f64::NAN
                        } else if kind == 0 {
                            all.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        } else {
                            all.iter().copied().fold(f64::INFINITY, f64::min)
                        };
                        assert!(x == want || (x.is_nan() && want.is_nan()), "{what}: segment {sg}: {x} vs {want}");
                    }
                }
            }
            if !dtype.is_float() {
                continue;
            }
            for log in [false, true] {
                let (g, w) = both(&e, &SEGMENT_SOFTMAX, vals.shape(), dtype, &[&vals, &p, &s], &[Scalar::Bool(log)]);
                assert_eq!(canon(&g), canon(&w), "{what}: softmax (log {log}) vs the CPU");
                let got = g.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
                let tol = match dtype {
                    DType::F16 | DType::BF16 => 1e-2,
                    // half an ulp of 3 or 2 mantissa bits, and the subnormals' absolute step
                    DType::F8E4M3 => 0.07,
                    DType::F8E5M2 => 0.13,
                    _ => 1e-6,
                };
                for members in &groups {
                    for col in 0..row {
                        let x: Vec<f64> = members.iter().map(|&j| v[j * row + col]).collect();
                        let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let total: f64 = x.iter().map(|y| (y - hi).exp()).sum();
                        for (&j, y) in members.iter().zip(&x) {
                            let want = if log { y - hi - total.ln() } else { (y - hi).exp() / total };
                            // E4M3 saturates at ±448
                            let want = if dtype == DType::F8E4M3 { want.clamp(-448.0, 448.0) } else { want };
                            let g = got[j * row + col];
                            let nan = x.iter().any(|y| y.is_nan());
                            let ok = if nan { g.is_nan() } else { (g - want).abs() <= tol * (1.0 + want.abs()) };
                            assert!(ok, "{what}: softmax of entry {j}: {g} vs {want}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn bad_positions_and_indices_are_the_cpu_errors() {
    let e = host_exec();
    for dtype in [DType::F32, DType::I8, DType::F16, DType::I64, DType::Bool] {
        let src = Tensor::ones(&[3, 2], dtype, Device::Cpu).unwrap();
        // positions past the source (base 1: 4 is row 3 of 3), and wrapping ones
        for (bad, base) in [(4i64, 1i64), (i64::MAX, -5), (3, 0), (i64::MAX, i64::MIN)] {
            let positions = i64s(vec![1, bad, 0], &[3]);
            let guarded = Tensor::full(&[10], Scalar::Int(9), dtype, Device::Cpu).unwrap();
            let out = guarded.narrow(0, 2, 6).unwrap().reshape(&[3, 2]).unwrap();
            let before = bits(&guarded);
            let params = [Scalar::Int(base)];
            let got = step(&e, &GATHER_ROWS, &out, &[&src, &positions], &params);
            let want = cpu_step(&GATHER_ROWS, &empty(&[3, 2], dtype), &[&src, &positions], &params);
            assert!(matches!(got, Err(Error::OutOfBounds { .. })), "{dtype} {bad}: {got:?}");
            assert!(matches!(want, Err(Error::OutOfBounds { .. })), "{dtype} {bad}: the CPU: {want:?}");
            let g = bits(&guarded);
            assert!(g[..2] == before[..2] && g[8..] == before[8..], "{dtype} {bad}: a guard was written: {g:?}");
        }
        // an index outside the dense tensor's sizes
        let dense = Tensor::ones(&[3, 2], dtype, Device::Cpu).unwrap();
        for bad in [-1i64, 3, i64::MAX] {
            let idx = i64s(vec![0, bad, 2], &[1, 3]);
            let got = step(&e, &DENSE_GATHER, &empty(&[3, 2], dtype), &[&dense, &idx], &[]);
            let want = cpu_step(&DENSE_GATHER, &empty(&[3, 2], dtype), &[&dense, &idx], &[]);
            assert!(matches!(got, Err(Error::OutOfBounds { .. })), "{dtype} {bad}: {got:?}");
            assert!(matches!(want, Err(Error::OutOfBounds { .. })), "{dtype} {bad}: the CPU: {want:?}");
        }
        // a permutation entry outside 0..nnz, a segment past the output's rows
        let vals = Tensor::ones(&[3, 2], dtype, Device::Cpu).unwrap();
        for (perm, seg) in [(vec![0i64, 5, 1], vec![0i64, 0, 1]), (vec![0, 2, 1], vec![0, 1, 2])] {
            let (p, s) = (i64s(perm, &[3]), i64s(seg, &[3]));
            let params = [Scalar::Int(0), Scalar::Int(0)];
            let got = step(&e, &SEGMENT_EXTREME, &empty(&[2, 2], dtype), &[&vals, &p, &s], &params);
            let want = cpu_step(&SEGMENT_EXTREME, &empty(&[2, 2], dtype), &[&vals, &p, &s], &params);
            assert!(matches!(got, Err(Error::InvalidArgument { .. })), "{dtype}: {got:?}");
            assert!(matches!(want, Err(Error::InvalidArgument { .. })), "{dtype}: the CPU: {want:?}");
        }
    }
    let vals = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    let (p, s) = (i64s(vec![0, -1, 2], &[3]), i64s(vec![0, 0, 1], &[3]));
    let got = step(&e, &SEGMENT_SOFTMAX, &empty(&[3], DType::F32), &[&vals, &p, &s], &[Scalar::Bool(false)]);
    assert!(matches!(got, Err(Error::InvalidArgument { .. })), "{got:?}");
    let ints = Tensor::ones(&[3], DType::I32, Device::Cpu).unwrap();
    let (p, s) = (i64s(vec![0, 1, 2], &[3]), i64s(vec![0, 0, 1], &[3]));
    assert!(step(&e, &SEGMENT_SOFTMAX, &empty(&[3], DType::I32), &[&ints, &p, &s], &[]).is_err(), "int softmax");
}
