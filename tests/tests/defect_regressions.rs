//! Regression tests for defects found by using the library from safe code (issue 9):
//! overlap, invalid `bool`s from recycled memory, re-entrant locks, 0-dim promotion, bool
//! arithmetic, and overflow on debug builds. Each fails on the code before its fix.

use tensor_core::{Allocator, Storage};
use tensor_kernels_cpu::alloc as cpu_alloc;
use tensor_ops::prelude::*;

fn t<T: tensor_ops::tensor_core::Element>(v: Vec<T>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

// ---------------------------------------------------------------- internal overlap

#[test]
fn sub_out_into_a_stepped_middle_slice() {
    let base = Tensor::full(&[3, 7, 3], -1.0f32, DType::F32, Device::Cpu).unwrap();
    let out = base.slice(1, 0, 7, 2).unwrap();
    assert_eq!((out.shape(), out.strides()), (&[3usize, 4, 3][..], &[21isize, 6, 1][..]));
    let a = Tensor::arange(0, 36, 1, DType::F32, Device::Cpu).unwrap().view(&[3, 4, 3]).unwrap();
    let b = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    tensor_ops::sub_out(&a, &b, &out).unwrap();
    let got = base.to_vec::<f32>().unwrap();
    for i in 0..3 {
        for j in 0..7 {
            for k in 0..3 {
                let want = if j % 2 == 0 { (i * 12 + (j / 2) * 3 + k) as f32 - 1.0 } else { -1.0 };
                assert_eq!(got[i * 21 + j * 3 + k], want, "[{i}, {j}, {k}]");
            }
        }
    }
}

#[test]
fn overlap_errors_say_what_overlaps() {
    let row = Tensor::zeros(&[1, 3], DType::F32, Device::Cpu).unwrap();
    let expanded = row.expand(&[4, 3]).unwrap();
    let e = expanded.fill_(1.0).unwrap_err().to_string();
    assert!(e.contains("fill_") && e.contains("expanded view") && e.contains("dim 0"), "{e}");
    let base = Tensor::zeros(&[16], DType::F32, Device::Cpu).unwrap();
    let aliased = base.as_strided(&[3, 3], &[2, 1], 0).unwrap();
    let e = tensor_ops::exp_out(&Tensor::ones(&[3, 3], DType::F32, Device::Cpu).unwrap(), &aliased)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exp") && e.contains("overlapping strides") && !e.contains("expanded"), "{e}");
}

// ---------------------------------------------------------------- bool bytes

/// Frees a block of `bytes` full of 0xAA back into the global caching allocator, so the
/// next allocation of that size class gets it back dirty.
fn leave_dirty_block(bytes: usize) {
    let block = cpu_alloc::global().allocate(bytes).unwrap();
    // SAFETY: the block is ours and `bytes` long.
    unsafe { std::ptr::write_bytes(block.as_ptr(), 0xAA, bytes) };
    drop(block);
}

#[test]
fn a_recycled_dirty_block_never_makes_an_invalid_bool() {
    cpu_alloc::set_enabled(true);
    let bytes = 4096 + 64 * 7; // an unusual size class, so other tests do not take it
    leave_dirty_block(bytes);
    let block = cpu_alloc::global().allocate_uninit_on(Device::Cpu, bytes).unwrap();
    // SAFETY: reading initialized bytes of a block we own.
    let first = unsafe { *block.as_ptr() };
    assert_eq!(first, 0xAA, "the test needs the dirty block back from the cache");
    let flags = Tensor::from_storage(Storage::from_data_ptr(block, DType::Bool), &[bytes]).unwrap();
    let v = flags.to_vec::<bool>().unwrap();
    // An invalid bool byte can compare both `== true` and `== false`: spell both out.
    #[allow(clippy::bool_comparison)]
    let valid = v.iter().all(|&b| b && b == true && b != false);
    assert!(valid);
    assert_eq!(flags.to_dtype(DType::U8).unwrap().to_vec::<u8>().unwrap(), vec![1u8; bytes]);
    assert_eq!(flags.eq(&flags).unwrap().to_vec::<bool>().unwrap(), vec![true; bytes]);
    assert!(flags.item().is_err());
    assert_eq!(flags.narrow(0, 3, 1).unwrap().item().unwrap(), Scalar::Bool(true));
}

#[test]
fn zeroed_allocations_and_empty_bool_tensors_are_clean_after_recycling() {
    cpu_alloc::set_enabled(true);
    let bytes = 4096 + 64 * 9;
    leave_dirty_block(bytes);
    // `allocate` promises zeros, recycled or not.
    let block = cpu_alloc::global().allocate(bytes).unwrap();
    // SAFETY: reading initialized bytes of a block we own.
    let zero = unsafe { std::slice::from_raw_parts(block.as_ptr(), bytes) }.iter().all(|&b| b == 0);
    assert!(zero);
    drop(block);
    leave_dirty_block(bytes);
    let e = Tensor::empty(&[bytes], DType::Bool, Device::Cpu).unwrap();
    assert_eq!(e.to_vec::<bool>().unwrap(), vec![false; bytes]);
}

#[test]
fn resize_of_a_0_dim_tensor_drops_the_old_value() {
    cpu_alloc::set_enabled(true);
    for dtype in [DType::F32, DType::I64, DType::Bool] {
        let mut x = Tensor::full(&[], 7, dtype, Device::Cpu).unwrap();
        x.resize_(&[3]).unwrap();
        let zeros = Tensor::zeros(&[3], dtype, Device::Cpu).unwrap();
        assert_eq!(x.eq(&zeros).unwrap().to_vec::<bool>().unwrap(), vec![true; 3], "{dtype}");
    }
}

// ---------------------------------------------------------------- re-entrant locks

#[test]
fn a_held_read_guard_makes_a_write_an_error_not_a_hang() {
    let t = Tensor::zeros(&[4], DType::F32, Device::Cpu).unwrap();
    let one = Tensor::ones(&[4], DType::F32, Device::Cpu).unwrap();
    {
        let _g = t.storage().read().unwrap();
        let e = t.add_(&one).unwrap_err();
        assert!(matches!(e, Error::Locked { .. }), "{e}");
        assert!(e.to_string().contains("add"), "{e}");
        assert!(matches!(t.fill_(1.0).unwrap_err(), Error::Locked { op: "fill_", .. }));
        assert!(matches!(t.copy_(&one).unwrap_err(), Error::Locked { op: "copy_", .. }));
        // Reading again on the same thread is fine (no writer is waiting).
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 4]);
        assert_eq!(t.add(&one).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 4]);
        assert!(t.storage().is_allocated());
    }
    t.add_(&one).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0; 4]);
}

#[test]
fn a_held_write_guard_makes_any_access_an_error() {
    let t = Tensor::zeros(&[4], DType::I32, Device::Cpu).unwrap();
    let view = t.narrow(0, 1, 2).unwrap();
    {
        let _g = t.storage().write().unwrap();
        assert!(matches!(view.to_vec::<i32>().unwrap_err(), Error::Locked { op: "to_vec", .. }));
        let e = view.neg().unwrap_err();
        assert!(matches!(e, Error::Locked { op: "neg", .. }), "{e}");
        assert!(t.storage().write().is_err() && t.storage().read().is_err());
        assert!(t.storage().is_allocated());
    }
    // Other threads just wait; the guard's thread is the only one refused.
    let g = t.storage().write().unwrap();
    let worker = {
        let t = t.clone();
        std::thread::spawn(move || t.fill_(5).map(|_| t.to_vec::<i32>().unwrap()))
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    drop(g);
    assert_eq!(worker.join().unwrap().unwrap(), vec![5; 4]);
}

// ---------------------------------------------------------------- promotion of 0-dim tensors

#[test]
fn zero_dim_operands_of_a_higher_category_keep_their_width() {
    let i = t(vec![1i32, 2], &[2]);
    let d = Tensor::scalar(0.1, DType::F64).unwrap();
    let r = i.add(&d).unwrap();
    assert_eq!(r.dtype(), DType::F64);
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![1.1, 2.1]);
    let f = t(vec![1f32], &[1]);
    assert_eq!(f.add(&d).unwrap().dtype(), DType::F32);
    let u = t(vec![1u8], &[1]);
    assert_eq!(u.add(&Tensor::scalar(1, DType::I64).unwrap()).unwrap().dtype(), DType::U8);
    assert_eq!(u.add(&Tensor::scalar(1.5, DType::BF16).unwrap()).unwrap().dtype(), DType::BF16);
    let both = Tensor::scalar(1, DType::I16).unwrap().add(&Tensor::scalar(2, DType::I64).unwrap()).unwrap();
    assert_eq!(both.dtype(), DType::I64);
}

// ---------------------------------------------------------------- bool arithmetic

#[test]
fn bool_arithmetic_is_logical() {
    let a = t(vec![false, false, true, true], &[4]);
    let b = t(vec![false, true, false, true], &[4]);
    let or = vec![false, true, true, true];
    let and = vec![false, false, false, true];
    let check = |r: Tensor, want: &Vec<bool>, what: &str| {
        assert_eq!(r.dtype(), DType::Bool, "{what}");
        assert_eq!(&r.to_vec::<bool>().unwrap(), want, "{what}");
    };
    check(a.add(&b).unwrap(), &or, "add");
    check(a.mul(&b).unwrap(), &and, "mul");
    check(a.maximum(&b).unwrap(), &or, "maximum");
    check(a.minimum(&b).unwrap(), &and, "minimum");
    // strided and broadcast operands, _out and in place
    let col = t(vec![true, false], &[2, 1]);
    let grid = t(vec![false, true, false, false], &[2, 2]).t().unwrap(); // [[F, F], [T, F]]
    check(col.add(&grid).unwrap(), &vec![true, true, true, false], "broadcast add");
    check(col.mul(&grid).unwrap(), &vec![false, false, false, false], "broadcast mul");
    let out = Tensor::empty(&[4], DType::Bool, Device::Cpu).unwrap();
    tensor_ops::mul_out(&a, &b, &out).unwrap();
    check(out, &and, "mul_out");
    let c = a.to_dtype(DType::Bool).unwrap().contiguous().unwrap();
    let c = Tensor::from_vec(c.to_vec::<bool>().unwrap(), &[4]).unwrap();
    c.maximum_(&b).unwrap();
    check(c, &or, "maximum_");
    // bool with an integer promotes to the integer
    let n = a.add(&t(vec![1i32, 1, 1, 1], &[4])).unwrap();
    assert_eq!(n.to_vec::<i32>().unwrap(), vec![1, 1, 2, 2]);
}

// ---------------------------------------------------------------- overflow in debug builds

#[test]
fn arange_at_the_ends_of_i64() {
    let r = Tensor::arange(i64::MIN, i64::MAX, i64::MAX, DType::I64, Device::Cpu).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![i64::MIN, -1, i64::MAX - 1]);
    let down = Tensor::arange(i64::MAX, i64::MIN, i64::MIN, DType::I64, Device::Cpu).unwrap();
    assert_eq!(down.to_vec::<i64>().unwrap(), vec![i64::MAX, -1]);
    assert!(Tensor::arange(i64::MIN, i64::MAX, 1, DType::I8, Device::Cpu).is_err());
}

#[test]
fn view_of_huge_unreachable_strides_does_not_overflow() {
    let base = Tensor::zeros(&[4], DType::F32, Device::Cpu).unwrap();
    let odd = base.as_strided(&[1, 2, 1], &[1 << 62, 1, 1 << 62], 0).unwrap();
    for shape in [&[2isize][..], &[1, 1, 2, 1], &[2, 1, 1], &[-1]] {
        let v = odd.view(shape).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.0, 0.0]);
    }
    let wide = base.as_strided(&[2, 1], &[2, isize::MAX], 0).unwrap();
    let r = wide.reshape(&[1, 2]).unwrap();
    assert_eq!(r.shape(), &[1, 2]);
    // A lazy storage is never allocated here, so a reachable stride of 2^62 is possible.
    let huge = Tensor::empty(&[(1usize << 62) + 2], DType::U8, Device::Cpu).unwrap();
    let v = huge.as_strided(&[2, 2], &[1, 1 << 62], 0).unwrap();
    assert!(v.view(&[4]).is_err());
    let w = v.view(&[2, 1, 2]).unwrap();
    assert_eq!((w.strides()[0], w.strides()[2]), (1, 1 << 62));
    assert!(!huge.storage().is_allocated());
}

#[test]
fn big_unsigned_scalars_do_not_wrap() {
    assert_eq!(Scalar::from(usize::MAX), Scalar::Float(usize::MAX as f64));
    assert_eq!(Scalar::from(u64::MAX).to::<i64>(), i64::MAX);
    assert_eq!(Scalar::from(i64::MAX as usize), Scalar::Int(i64::MAX));
    let x = Tensor::zeros(&[1], DType::I64, Device::Cpu).unwrap();
    x.fill_(usize::MAX).unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![i64::MAX]);
}

// ---------------------------------------------------------------- read-only storage

#[test]
fn a_read_only_storage_refuses_every_write_path() {
    let mut t = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[4]).unwrap();
    let view = t.narrow(0, 1, 2).unwrap();
    t.storage().set_read_only();
    let one = Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap();
    let refused = |r: Result<()>, op: &str| match r {
        Err(Error::ReadOnly { op: o }) => assert_eq!(o, op),
        other => panic!("{op}: expected ReadOnly, got {other:?}"),
    };
    refused(view.fill_(0.0), "fill_");
    refused(view.copy_(&one), "copy_");
    refused(view.add_(&one), "add");
    refused(tensor_ops::exp_out(&one, &view), "exp");
    refused(t.storage().write().map(|_| ()), "Storage::write");
    refused(t.extend_(2, 50), "extend_");
    refused(t.resize_(&[2]), "resize_");
    refused(t.reserve(1 << 10), "reserve");
    refused(t.shrink_to(2), "shrink_to");
    // nothing was written; reads and ops with new outputs work
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 2., 3., 4.]);
    assert_eq!(view.add(&one).unwrap().to_vec::<f32>().unwrap(), vec![3., 4.]);
    assert_eq!(view.contiguous().unwrap().to_vec::<f32>().unwrap(), vec![2., 3.]);
    let copy = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    copy.copy_(&view).unwrap();
    assert_eq!(copy.to_vec::<f32>().unwrap(), vec![2., 3.]);
}

// ---------------------------------------------------------------- narrow results into wider outputs

/// A narrow-float result (f16, bf16, the 8-bit floats: computed in f32) written into an
/// output of another dtype is the result rounded to its own dtype, then cast, as in PyTorch
/// and NumPy: `exp_out(&f16, &f32_out)` held the unrounded f32 value (found by the value
/// fuzzer, `tests/examples/value_fuzz.rs`). Eager `_out` calls (dense and strided paths),
/// in-place calls and fused `eval_into` all.
#[test]
fn narrow_float_results_round_to_their_dtype_before_a_wider_out() {
    use tensor_ops::fuse::Expr;
    let values: Vec<f32> = (0..301).map(|i| (i as f32 - 150.0) * 0.0137).collect();
    let x32 = t(values, &[301]);
    let divisors: Vec<f32> = (0..301).map(|i| ((i * 7 % 13) as f32 + 1.0) * 0.31).collect();
    let d32 = t(divisors, &[301]);
    for (dtype, out_dtype) in [
        (DType::F16, DType::F32),
        (DType::F16, DType::F64),
        (DType::BF16, DType::F16),
        (DType::F8E4M3, DType::F32),
        (DType::F8E5M2, DType::BF16),
    ] {
        let x = x32.to_dtype(dtype).unwrap();
        let y = d32.to_dtype(dtype).unwrap().flip(0).unwrap();
        let want = |r: Tensor| {
            assert_eq!(r.dtype(), dtype);
            r.to_dtype(out_dtype).unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
        };
        let got = |o: &Tensor| o.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        let case = format!("{dtype:?} into {out_dtype:?}");
        // dense operands (the short path) and a strided output (the general path)
        let out = Tensor::zeros(&[301], out_dtype, Device::Cpu).unwrap();
        tensor_ops::exp_out(&x, &out).unwrap();
        assert_eq!(got(&out), want(x.exp().unwrap()), "exp_out {case}");
        let wide = Tensor::zeros(&[602], out_dtype, Device::Cpu).unwrap();
        let strided = wide.slice(0, 0, 602, 2).unwrap();
        tensor_ops::div_out(&x, &y, &strided).unwrap();
        assert_eq!(got(&strided), want(x.div(&y).unwrap()), "div_out {case}");
        // fused: a chain into the wider output
        let e = Expr::input(&x).mul(Expr::input(&y)).sigmoid();
        e.eval_into(&out).unwrap();
        assert_eq!(got(&out), want(e.eval().unwrap()), "fused eval_into {case}");
    }
    // a float result of integer and 8-bit float operands into a wider output
    let i = t((0..301).map(|k| ((k % 200) as i16 - 100) as i8).collect::<Vec<i8>>(), &[301]);
    let f8 = x32.to_dtype(DType::F8E4M3).unwrap();
    let out = Tensor::zeros(&[301], DType::F32, Device::Cpu).unwrap();
    tensor_ops::add_out(&i, &f8, &out).unwrap();
    let want = i.add(&f8).unwrap();
    assert_eq!(want.dtype(), DType::F8E4M3);
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        want.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(),
        "add_out i8 + f8e4m3 into f32"
    );
}

// ---------------------------------------------------------------- softmax of huge logits

/// softmax / log_softmax along a dim that is not a dense last dim (a transposed or
/// expanded view) went through one f64 log-sum-exp, which cannot hold 1e30 + ln n: a row
/// of 130 equal logits of 1e30 (or a fully masked row of −1e30) gave 1.0 everywhere
/// instead of 1/130 (found by the value fuzzer). Every layout now gives the max-subtracted
/// answer, as the fused rows and PyTorch do.
#[test]
fn softmax_of_rows_of_huge_equal_logits_is_uniform_in_every_layout() {
    for fill in [1e30f32, -1e30, 3e9] {
        for dtype in [DType::F32, DType::F64, DType::F16] {
            let fill = if dtype == DType::F16 { fill.clamp(-6e4, 6e4) } else { fill };
            let col = t(vec![fill; 3 * 5], &[3, 5, 1]).to_dtype(dtype).unwrap();
            let expanded = col.expand(&[3, 5, 130]).unwrap();
            let transposed = expanded.contiguous().unwrap().transpose(1, 2).unwrap(); // rows along dim 1
            for (what, x, dim) in [
                ("expanded", &expanded, 2),
                ("transposed", &transposed, 1),
                ("contiguous", &expanded.contiguous().unwrap(), 2),
            ] {
                let s = x.softmax(dim).unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
                let tol = if dtype == DType::F16 { 1e-5 } else { 1e-9 };
                assert!(
                    s.iter().all(|&v| (v - 1.0 / 130.0).abs() < tol),
                    "softmax {what} {dtype:?} {fill}: {:?}",
                    &s[..3]
                );
                let l = x.log_softmax(dim).unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
                let tol = if dtype == DType::F16 { 4e-3 } else { 1e-6 };
                assert!(
                    l.iter().all(|&v| (v + 130f64.ln()).abs() < tol),
                    "log_softmax {what} {dtype:?} {fill}: {:?}",
                    &l[..3]
                );
            }
        }
    }
    // empty extents and ∞ rows keep their answers (an empty result; NaN rows)
    let empty = Tensor::zeros(&[3, 0], DType::F32, Device::Cpu).unwrap().t().unwrap();
    assert_eq!(empty.softmax(0).unwrap().shape(), &[0, 3]);
    let inf = t(vec![f32::INFINITY, 1.0, 2.0, 3.0], &[2, 2]).t().unwrap();
    let s = inf.softmax(0).unwrap().to_vec::<f32>().unwrap();
    assert!(s[0].is_nan() && s[2].is_nan(), "{s:?}");
    // one huge row beside ordinary ones: the ordinary rows keep their values
    let x = t(vec![1e30f32, 1e30, 0.0, 1.0], &[2, 2]).t().unwrap().contiguous().unwrap().t().unwrap();
    assert_eq!(x.softmax(1).unwrap().to_vec::<f32>().unwrap()[..2], [0.5, 0.5]);
}

// ---------------------------------------------------------------- found by the value fuzzer

/// A sum over some (not all) sparse dims of an f16/bf16/f8 tensor added the entries that
/// meet in f16, rounding at each: `[[1000, 0.4, 0.4, -1000, 0, 3]]` summed over dim 1 of
/// a 2-sparse-dim tensor gave 4.0 where the dense sum (f32 accumulation, one rounding) gives
/// 3.80. They now add up in f32 and round once.
#[test]
fn sparse_sums_of_narrow_floats_accumulate_like_the_dense_sum() {
    let d = t(vec![1000.0f32, 0.4, 0.4, -1000.0, 0.0, 3.0], &[1, 6]);
    for dtype in [DType::F16, DType::BF16] {
        let x = d.to_dtype(dtype).unwrap();
        let want = x.sum(&[1], false).unwrap().to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        for s in [x.to_sparse_coo().unwrap(), x.to_sparse_csr().unwrap()] {
            let got = s.sum(&[1], false).unwrap();
            assert_eq!(got.dtype(), dtype);
            let got = if got.is_sparse() { got.to_dense().unwrap() } else { got };
            assert_eq!(got.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(), want, "{dtype:?} {:?}", s.layout());
        }
    }
}

/// `fill_` of a qint32 tensor with a value beyond its range stored i32::MIN for a large
/// positive value: the clamp's upper end, 2^31 as an f32, became 2^31 as an i64 and wrapped
/// in the i32 fill. It now saturates as quantizing does (PyTorch: `fill_(1e30)` gives
/// 2147483647).
#[test]
fn qint32_fill_saturates_like_quantizing() {
    use tensor_ops::{quantize_per_tensor, Quantizer};
    for value in [1e30f64, 3e9, -1e30, -3e9, 2147483600.0] {
        let q = Quantizer::per_tensor(DType::QInt32, 1.0, 0).unwrap();
        let x = Tensor::empty_quantized(&[4], &q, Device::Cpu).unwrap();
        x.fill_(value).unwrap();
        let want =
            quantize_per_tensor(&Tensor::full(&[4], value, DType::F32, Device::Cpu).unwrap(), 1.0, 0, DType::QInt32)
                .unwrap();
        assert_eq!(
            x.int_repr().unwrap().to_vec::<i32>().unwrap(),
            want.int_repr().unwrap().to_vec::<i32>().unwrap(),
            "{value}"
        );
        let pc = Quantizer::per_channel(DType::QInt32, 0, vec![0.5, 2.0], vec![0, 3]).unwrap();
        let y = Tensor::empty_quantized(&[2, 3], &pc, Device::Cpu).unwrap();
        y.fill_(value).unwrap();
        let ints = y.int_repr().unwrap().to_vec::<i32>().unwrap();
        let sat = if value > 0.0 { i32::MAX } else { i32::MIN };
        assert!(value.abs() < 1e20 || ints.iter().all(|&i| i == sat), "{value}: {ints:?}");
    }
}
