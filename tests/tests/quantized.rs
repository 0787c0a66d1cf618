//! The affine-quantized dtypes (issue 35) through the public API on the CPU: quantizing and
//! dequantizing against a naive model and PyTorch 2.15's measured results (ties, saturation,
//! NaN, per-channel along every axis of strided inputs), views carrying per-channel
//! quantizers, copies that requantize, fills, maps that dequantize → compute in f32 →
//! quantize once (built-in and user ops), reductions of the values, fused chains equal to
//! the eager chain, and the errors.

use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor, Quantizer};

/// The model of quantizing one value: PyTorch's formula, written out here independently
/// (f32 arithmetic, `1/scale` rounded to f32, ties to even, saturation, NaN as PyTorch).
fn model_q(x: f32, scale: f64, zp: i64, dtype: DType) -> i64 {
    let (lo, hi) = match dtype {
        DType::QInt8 => (-128i64, 127i64),
        DType::QUInt8 => (0, 255),
        _ => (i32::MIN as i64, i32::MAX as i64),
    };
    let inv = 1.0f32 / scale as f32;
    let v = (x * inv).round_ties_even() + zp as f32;
    if v.is_nan() {
        return if dtype == DType::QInt32 { lo } else { hi };
    }
    // f32 → i64 is exact for these integral values; then saturate to the stored range.
    (v as i64).clamp(lo, hi)
}

fn model_dq(q: i64, scale: f64, zp: i64) -> f32 {
    (q as f32 - zp as f32) * scale as f32
}

fn ints(t: &Tensor) -> Vec<i64> {
    let r = t.int_repr().unwrap();
    match r.dtype() {
        DType::I8 => r.to_vec::<i8>().unwrap().into_iter().map(i64::from).collect(),
        DType::U8 => r.to_vec::<u8>().unwrap().into_iter().map(i64::from).collect(),
        DType::I32 => r.to_vec::<i32>().unwrap().into_iter().map(i64::from).collect(),
        d => panic!("int_repr gave {d}"),
    }
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// Deterministic values with ties, extremes and specials mixed in.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            match i % 11 {
                0 => (i as f32 / 2.0).floor() + 0.5, // ties
                1 => -((i as f32 / 2.0).floor() + 0.5),
                2 => 1e6 * (u - 0.5),
                _ => 40.0 * (u - 0.5),
            }
        })
        .collect()
}

const Q: [DType; 3] = [DType::QInt8, DType::QUInt8, DType::QInt32];

#[test]
fn quantize_matches_pytorch_on_ties_extremes_and_nan() {
    // Measured with PyTorch 2.15 (torch.quantize_per_tensor(x, 1.0, 0, dtype).int_repr()).
    let x = Tensor::from_vec(vec![0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, 1e10, -1e10, f32::NAN, f32::INFINITY], &[10])
        .unwrap();
    let want: [(DType, [i64; 10]); 3] = [
        (DType::QInt8, [0, 2, 2, 0, -2, -2, 127, -128, 127, 127]),
        (DType::QUInt8, [0, 2, 2, 0, 0, 0, 255, 0, 255, 255]),
        (DType::QInt32, [0, 2, 2, 0, -2, -2, i32::MAX as i64, i32::MIN as i64, i32::MIN as i64, i32::MAX as i64]),
    ];
    for (d, w) in want {
        assert_eq!(ints(&quantize_per_tensor(&x, 1.0, 0, d).unwrap()), w, "{d}");
    }
    // quint8 with zero point 10: [0.5, 1.5, 2.5, 300, -3] → [10, 12, 12, 255, 7].
    let x = Tensor::from_vec(vec![0.5f32, 1.5, 2.5, 300.0, -3.0], &[5]).unwrap();
    assert_eq!(ints(&quantize_per_tensor(&x, 1.0, 10, DType::QUInt8).unwrap()), [10, 12, 12, 255, 7]);
    // qint32 saturates and rounds its f32 sum: PyTorch gives these.
    let x = Tensor::from_vec(vec![1e10f32, -1e10, 3e9, 2147483520.0], &[4]).unwrap();
    let q = quantize_per_tensor(&x, 1.0, 5, DType::QInt32).unwrap();
    assert_eq!(ints(&q), [i32::MAX as i64, i32::MIN as i64, i32::MAX as i64, 2147483520]);
}

#[test]
fn quantize_and_dequantize_match_the_model_for_every_dtype_and_layout() {
    let data = values(3 * 70 * 9, 7);
    let x = Tensor::from_vec(data.clone(), &[3, 70, 9]).unwrap();
    // Plain, transposed, stepped and broadcast sources, and an f64 and an i32 source.
    let sources: Vec<(&str, Tensor, Vec<f32>)> = vec![
        ("contiguous", x.clone(), data.clone()),
        ("transposed", x.transpose(0, 2).unwrap(), x.transpose(0, 2).unwrap().contiguous().unwrap().to_vec().unwrap()),
        (
            "stepped",
            x.slice(1, 1, 70, 3).unwrap(),
            x.slice(1, 1, 70, 3).unwrap().contiguous().unwrap().to_vec().unwrap(),
        ),
        ("f64", x.to_dtype(DType::F64).unwrap(), data.clone()),
    ];
    for d in Q {
        for &(scale, zp) in &[(0.1, 3i64), (1.0 / 3.0, 0), (0.017, -5), (2.5, 100)] {
            let zp = if d == DType::QUInt8 { zp.abs() } else { zp };
            for (what, src, vals) in &sources {
                let q = quantize_per_tensor(src, scale, zp, d).unwrap();
                assert_eq!((q.dtype(), q.shape()), (d, src.shape()));
                assert_eq!((q.q_scale().unwrap(), q.q_zero_point().unwrap()), (scale, zp));
                let want: Vec<i64> = vals.iter().map(|&v| model_q(v, scale, zp, d)).collect();
                assert_eq!(ints(&q), want, "{d} {what} scale {scale} zp {zp}");
                let back: Vec<f32> = want.iter().map(|&v| model_dq(v, scale, zp)).collect();
                assert_eq!(f32s(&q.dequantize().unwrap()), back, "{d} {what}");
                // A strided view of the quantized tensor dequantizes through its strides.
                let t = q.flip(0).unwrap();
                let flipped = q.dequantize().unwrap().flip(0).unwrap().contiguous().unwrap();
                assert_eq!(f32s(&t.dequantize().unwrap()), f32s(&flipped));
            }
        }
    }
}

#[test]
fn a_large_quantize_uses_every_path_the_same() {
    // Past the parallel grain and the streaming threshold.
    let n = 1 << 20;
    let data = values(n, 3);
    let x = Tensor::from_vec(data.clone(), &[n]).unwrap();
    let q = quantize_per_tensor(&x, 0.05, -3, DType::QInt8).unwrap();
    let want: Vec<i64> = data.iter().map(|&v| model_q(v, 0.05, -3, DType::QInt8)).collect();
    assert_eq!(ints(&q), want);
    let back: Vec<f32> = want.iter().map(|&v| model_dq(v, 0.05, -3)).collect();
    assert_eq!(f32s(&q.dequantize().unwrap()), back);
}

#[test]
fn per_channel_quantize_along_every_axis_of_strided_inputs() {
    let data = values(4 * 5 * 6, 11);
    let base = Tensor::from_vec(data, &[4, 5, 6]).unwrap();
    for src in [base.clone(), base.permute(&[2, 0, 1]).unwrap(), base.slice(2, 0, 6, 2).unwrap()] {
        let vals = src.contiguous().unwrap().to_vec::<f32>().unwrap();
        let shape = src.shape().to_vec();
        for axis in 0..3 {
            for d in Q {
                let c = shape[axis];
                let scales: Vec<f64> = (0..c).map(|i| 0.05 + 0.07 * i as f64).collect();
                let zps: Vec<i64> =
                    (0..c).map(|i| if d == DType::QUInt8 { 3 * i as i64 } else { i as i64 - 2 }).collect();
                let s = Tensor::from_vec(scales.clone(), &[c]).unwrap();
                let z = Tensor::from_vec(zps.clone(), &[c]).unwrap();
                let q = quantize_per_channel(&src, &s, &z, axis, d).unwrap();
                assert_eq!(q.q_per_channel_axis().unwrap(), axis);
                assert_eq!(q.q_per_channel_scales().unwrap().to_vec::<f64>().unwrap(), scales);
                assert_eq!(q.q_per_channel_zero_points().unwrap().to_vec::<i64>().unwrap(), zps);
                let strides = tensor_ops::tensor_core::shape::contiguous_strides(&shape);
                let channel = |i: usize| (i / strides[axis] as usize) % c;
                let want: Vec<i64> =
                    vals.iter().enumerate().map(|(i, &v)| model_q(v, scales[channel(i)], zps[channel(i)], d)).collect();
                assert_eq!(ints(&q), want, "{d} axis {axis} shape {shape:?}");
                let back: Vec<f32> =
                    want.iter().enumerate().map(|(i, &v)| model_dq(v, scales[channel(i)], zps[channel(i)])).collect();
                assert_eq!(f32s(&q.dequantize().unwrap()), back);
            }
        }
    }
}

#[test]
fn views_carry_a_per_channel_quantizer() {
    let x = Tensor::from_vec(values(3 * 4 * 5, 5), &[3, 4, 5]).unwrap();
    let s = Tensor::from_vec(vec![0.1f64, 0.2, 0.3, 0.4], &[4]).unwrap();
    let z = Tensor::from_vec(vec![0i64, 1, -1, 2], &[4]).unwrap();
    let q = quantize_per_channel(&x, &s, &z, 1, DType::QInt8).unwrap();
    let dq = q.dequantize().unwrap();
    // Each view of q dequantizes to the same view of q's values.
    type View = Box<dyn Fn(&Tensor) -> Tensor>;
    let views: Vec<(&str, View)> = vec![
        ("transpose", Box::new(|t: &Tensor| t.transpose(0, 1).unwrap())),
        ("permute", Box::new(|t: &Tensor| t.permute(&[2, 1, 0]).unwrap())),
        ("narrow", Box::new(|t: &Tensor| t.narrow(1, 1, 2).unwrap())),
        ("slice", Box::new(|t: &Tensor| t.slice(1, 0, 4, 3).unwrap())),
        ("select axis", Box::new(|t: &Tensor| t.select(1, 2).unwrap())),
        ("select before", Box::new(|t: &Tensor| t.select(0, 1).unwrap())),
        ("flip", Box::new(|t: &Tensor| t.flip(1).unwrap())),
        ("unsqueeze", Box::new(|t: &Tensor| t.unsqueeze(0).unwrap())),
        ("expand", Box::new(|t: &Tensor| t.unsqueeze(0).unwrap().expand(&[2, 3, 4, 5]).unwrap())),
        ("reshape keeping the axis", Box::new(|t: &Tensor| t.reshape(&[3, 4, 5, 1]).unwrap())),
        ("contiguous of a transpose", Box::new(|t: &Tensor| t.transpose(1, 2).unwrap().contiguous().unwrap())),
    ];
    for (what, view) in &views {
        let v = view(&q);
        let want = view(&dq).contiguous().unwrap();
        assert_eq!(f32s(&v.dequantize().unwrap()), f32s(&want), "{what}");
        assert_eq!(v.dtype(), DType::QInt8, "{what}");
    }
    assert_eq!(q.transpose(0, 1).unwrap().q_per_channel_axis().unwrap(), 0);
    assert_eq!(q.permute(&[2, 0, 1]).unwrap().q_per_channel_axis().unwrap(), 2);
    let sliced = q.slice(1, 1, 4, 2).unwrap();
    assert_eq!(sliced.q_per_channel_scales().unwrap().to_vec::<f64>().unwrap(), vec![0.2, 0.4]);
    let one = q.select(1, 2).unwrap();
    assert_eq!((one.q_scale().unwrap(), one.q_zero_point().unwrap()), (0.3, -1));
    // Merging the channel dim with another is refused, not silently wrong.
    assert!(q.reshape(&[12, 5]).is_err());
    assert!(q.as_strided(&[2], &[1], 0).is_err());
}

#[test]
fn copies_requantize_and_fills_quantize() {
    let x = Tensor::from_vec(values(50, 2), &[5, 10]).unwrap();
    let a = quantize_per_tensor(&x, 0.2, 4, DType::QInt8).unwrap();
    // Into another quantizer: dequantize then quantize.
    let qb = Quantizer::per_tensor(DType::QUInt8, 0.3, 128).unwrap();
    let b = Tensor::empty_quantized(&[5, 10], &qb, Device::Cpu).unwrap();
    b.copy_(&a).unwrap();
    let want: Vec<i64> = ints(&a).iter().map(|&q| model_q(model_dq(q, 0.2, 4), 0.3, 128, DType::QUInt8)).collect();
    assert_eq!(ints(&b), want);
    // Same quantizer: the integers as they are, through strides.
    let c = Tensor::empty_quantized(&[10, 5], a.quantizer().unwrap(), Device::Cpu).unwrap();
    c.copy_(&a.t().unwrap()).unwrap();
    assert_eq!(ints(&c), ints(&a.t().unwrap().contiguous().unwrap()));
    assert_eq!(a.t().unwrap().contiguous().unwrap().quantizer(), a.quantizer());
    assert_eq!(a.deep_clone().unwrap().quantizer(), a.quantizer());
    // Into a float tensor: the values; from a float tensor: quantized.
    let f = Tensor::zeros(&[5, 10], DType::F64, Device::Cpu).unwrap();
    f.copy_(&a).unwrap();
    let dq: Vec<f64> = ints(&a).iter().map(|&q| model_dq(q, 0.2, 4) as f64).collect();
    assert_eq!(f.to_vec::<f64>().unwrap(), dq);
    // fill_: the value quantized (ties to even), per channel with each channel's scale.
    a.fill_(0.3).unwrap(); // 0.3 / 0.2 = 1.5 → 2, + 4
    assert_eq!(ints(&a), vec![6; 50]);
    let s = Tensor::from_vec(vec![0.1f64, 1.0], &[2]).unwrap();
    let z = Tensor::from_vec(vec![0i64, 0], &[2]).unwrap();
    let pc = quantize_per_channel(&Tensor::zeros(&[3, 2], DType::F32, Device::Cpu).unwrap(), &s, &z, 1, DType::QInt8)
        .unwrap();
    pc.fill_(2.0).unwrap();
    assert_eq!(ints(&pc), vec![20, 2, 20, 2, 20, 2]);
    assert_eq!(
        pc.select(0, 0).unwrap().select(0, 0).unwrap().item().unwrap(),
        Scalar::Float((20.0f32 * 0.1f32) as f64)
    );
}

#[test]
fn maps_dequantize_compute_in_f32_and_quantize_once() {
    let xa = Tensor::from_vec(values(6 * 40, 21), &[6, 40]).unwrap();
    let xb = Tensor::from_vec(values(40, 22), &[40]).unwrap();
    let a = quantize_per_tensor(&xa, 0.25, 3, DType::QInt8).unwrap();
    let b = quantize_per_tensor(&xb, 0.5, 100, DType::QUInt8).unwrap();
    let (va, vb) = (f32s(&a.dequantize().unwrap()), f32s(&b.dequantize().unwrap()));
    // relu keeps its input's quantizer (PyTorch's rule for a new result).
    let r = tensor_ops::relu(&a).unwrap();
    assert_eq!(r.quantizer(), a.quantizer());
    let want: Vec<i64> = va.iter().map(|&v| model_q(v.max(0.0), 0.25, 3, DType::QInt8)).collect();
    assert_eq!(ints(&r), want);
    // add into an output of a chosen scale/zero point (quantized::add(qa, qb, scale, zp)),
    // broadcasting b, and with a transposed output.
    let out_q = Quantizer::per_tensor(DType::QUInt8, 0.7, 60).unwrap();
    for transposed in [false, true] {
        let out = if transposed {
            Tensor::empty_quantized(&[40, 6], &out_q, Device::Cpu).unwrap().t().unwrap()
        } else {
            Tensor::empty_quantized(&[6, 40], &out_q, Device::Cpu).unwrap()
        };
        tensor_ops::add_out(&a, &b, &out).unwrap();
        let want: Vec<i64> =
            va.iter().enumerate().map(|(i, &v)| model_q(v + vb[i % 40], 0.7, 60, DType::QUInt8)).collect();
        assert_eq!(ints(&out.contiguous().unwrap()), want, "transposed out: {transposed}");
    }
    // A plain f32 input beside a quantized one is read as its values.
    let m = tensor_ops::mul(&a, &xb).unwrap();
    let xbv = xb.to_vec::<f32>().unwrap();
    let want: Vec<i64> = va.iter().enumerate().map(|(i, &v)| model_q(v * xbv[i % 40], 0.25, 3, DType::QInt8)).collect();
    assert_eq!(ints(&m), want);
    // Predicates give bool; in place keeps the quantizer.
    let gt = tensor_ops::gt(&a, &b).unwrap();
    assert_eq!(gt.dtype(), DType::Bool);
    let want: Vec<bool> = va.iter().enumerate().map(|(i, &v)| v > vb[i % 40]).collect();
    assert_eq!(gt.to_vec::<bool>().unwrap(), want);
    let c = a.deep_clone().unwrap();
    tensor_ops::sigmoid_(&c).unwrap();
    let want: Vec<i64> = va.iter().map(|&v| model_q(1.0 / (1.0 + (-v).exp()), 0.25, 3, DType::QInt8)).collect();
    let got = ints(&c);
    // sigmoid is within an ulp of the libm model: a quantization step may differ only at a tie.
    assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1), "{got:?} vs {want:?}");
    // Per-channel inputs: each channel with its own scale.
    let s = Tensor::from_vec(vec![0.1f64, 0.2, 0.3, 0.4, 0.5, 0.6], &[6]).unwrap();
    let z = Tensor::from_vec(vec![0i64; 6], &[6]).unwrap();
    let p = quantize_per_channel(&xa, &s, &z, 0, DType::QInt8).unwrap();
    let vp = f32s(&p.dequantize().unwrap());
    let sum = tensor_ops::add(&p, &a).unwrap();
    assert_eq!(sum.q_per_channel_axis().unwrap(), 0);
    let want: Vec<i64> = vp
        .iter()
        .zip(&va)
        .enumerate()
        .map(|(i, (&x, &y))| model_q(x + y, 0.1 * (i / 40 + 1) as f64, 0, DType::QInt8))
        .collect();
    assert_eq!(ints(&sum), want);
}

#[tensor_op(dtypes = [quantized])]
fn clamp_unit<T: Float>(x: T) -> T {
    if x > T::one() {
        T::one()
    } else if x < -T::one() {
        -T::one()
    } else {
        x
    }
}

#[test]
fn a_user_op_listing_quantized_gets_the_kernels() {
    let x = Tensor::from_vec(values(100, 9), &[100]).unwrap();
    for d in Q {
        let zp = if d == DType::QUInt8 { 128 } else { 0 };
        let q = quantize_per_tensor(&x, 0.01, zp, d).unwrap();
        let v = f32s(&q.dequantize().unwrap());
        let r = clamp_unit(&q).unwrap();
        let want: Vec<i64> = v.iter().map(|&v| model_q(v.clamp(-1.0, 1.0), 0.01, zp, d)).collect();
        assert_eq!(ints(&r), want, "{d}");
    }
    // No f32 row was listed: the op has the quantized rows only.
    assert!(clamp_unit(&x).is_err());
}

#[test]
fn reductions_reduce_the_values() {
    let x = Tensor::from_vec(values(4 * 30, 31), &[4, 30]).unwrap();
    let q = quantize_per_tensor(&x, 0.3, -2, DType::QInt8).unwrap();
    let v = q.dequantize().unwrap();
    for (a, b) in [
        (q.sum(&[1], false).unwrap(), v.sum(&[1], false).unwrap()),
        (q.mean(&[0], true).unwrap(), v.mean(&[0], true).unwrap()),
        (q.amax(&[1], false).unwrap(), v.amax(&[1], false).unwrap()),
        (q.amin_all().unwrap(), v.amin_all().unwrap()),
    ] {
        assert_eq!(a.dtype(), DType::F32);
        assert_eq!(f32s(&a), f32s(&b));
    }
    assert_eq!(
        q.argmax(1, false).unwrap().to_vec::<i64>().unwrap(),
        v.argmax(1, false).unwrap().to_vec::<i64>().unwrap()
    );
    assert_eq!(f32s(&tensor_ops::softmax(&q, 1).unwrap()), f32s(&tensor_ops::softmax(&v, 1).unwrap()));
}

#[test]
fn fused_chains_with_quantized_leaves_equal_the_eager_chain() {
    let x = Tensor::from_vec(values(8 * 16, 41), &[8, 16]).unwrap();
    let q = quantize_per_tensor(&x, 0.1, 0, DType::QInt8).unwrap();
    let fused = Expr::input(&q).relu().mul(0.5f32).eval().unwrap();
    let eager = tensor_ops::mul(&tensor_ops::relu(&q).unwrap(), &Tensor::scalar(0.5, DType::F32).unwrap()).unwrap();
    assert_eq!(fused.quantizer(), eager.quantizer());
    assert_eq!(ints(&fused), ints(&eager));
}

/// Broadcasting a one-channel per-channel tensor repeats its scale for every new channel:
/// an extent past memory (or past `usize`'s bytes) is an out-of-memory error, not an abort
/// or a capacity-overflow panic (found by `examples/api_fuzz.rs`).
#[test]
fn broadcasting_the_channel_axis_past_memory_is_an_error() {
    let x = Tensor::from_vec(vec![0.5f32, 1.0], &[1, 2]).unwrap();
    let s = Tensor::from_vec(vec![0.25f64], &[1]).unwrap();
    let z = Tensor::from_vec(vec![1i64], &[1]).unwrap();
    let q = quantize_per_channel(&x, &s, &z, 0, DType::QInt8).unwrap();
    // (2^60 channels: 2^63 bytes of scales, past what a Vec can even ask for)
    for extent in [1usize << 40, 1 << 60] {
        for r in [q.expand(&[extent, 2]), q.broadcast_to(&[3, extent, 2])] {
            let e = r.unwrap_err();
            assert!(matches!(e, Error::OutOfMemory { .. }), "{extent}: {e}");
            assert!(e.to_string().contains("scales and zero points"), "{e}");
        }
    }
    assert!(q.expand(&[usize::MAX, 2]).is_err());
    // A small broadcast still repeats the scale.
    let wide = q.expand(&[3, 2]).unwrap();
    assert_eq!(wide.q_per_channel_scales().unwrap().to_vec::<f64>().unwrap(), vec![0.25; 3]);
    assert_eq!(f32s(&wide.dequantize().unwrap()), vec![0.5, 1.0, 0.5, 1.0, 0.5, 1.0]);
}

/// A per-channel output runs channel by channel; an input that partially overlaps it (the
/// output's own flip) must still be read before any channel is written, as for a plain or
/// per-tensor output (found by `examples/api_fuzz.rs`'s aliasing check: the second half of
/// `add_out(&z, &z.flip(0), &z)` read already-written channels).
#[test]
fn per_channel_outputs_read_overlapping_inputs_before_writing() {
    for dtype in [DType::QInt8, DType::QUInt8, DType::QInt32] {
        for (shape, axis) in [(vec![7usize], 0usize), (vec![6, 5], 0), (vec![4, 9], 1), (vec![70_001], 0)] {
            let n: usize = shape.iter().product();
            let x = Tensor::from_vec(values(n, 11), &shape).unwrap();
            let c = shape[axis];
            let s = Tensor::from_vec((0..c).map(|i| 0.05 + 0.01 * (i % 7) as f64).collect(), &[c]).unwrap();
            let zp = if dtype == DType::QUInt8 { 128 } else { 0 };
            let z = Tensor::full(&[c], zp, DType::I64, Device::Cpu).unwrap();
            let q = quantize_per_channel(&x, &s, &z, axis, dtype).unwrap();
            for dim in 0..shape.len() {
                let fresh = q.deep_clone().unwrap();
                let want = fresh.add(&fresh.flip(dim).unwrap()).unwrap();
                let out = q.deep_clone().unwrap();
                tensor_ops::add_out(&out, &out.flip(dim).unwrap(), &out).unwrap();
                assert_eq!(ints(&out), ints(&want), "{dtype:?} {shape:?} axis {axis}, flip({dim})");
            }
        }
    }
}

#[test]
fn bad_quantized_input_is_an_error_naming_what_is_valid() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let msg = |r: Result<Tensor>| r.unwrap_err().to_string();
    assert!(msg(quantize_per_tensor(&x, 0.0, 0, DType::QInt8)).contains("scale"));
    assert!(msg(quantize_per_tensor(&x, f64::NAN, 0, DType::QInt8)).contains("scale"));
    assert!(msg(quantize_per_tensor(&x, 1.0, 300, DType::QUInt8)).contains("0..=255"));
    assert!(msg(quantize_per_tensor(&x, 1.0, 0, DType::I8)).contains("not a quantized dtype"));
    assert!(msg(Tensor::empty(&[2], DType::QInt8, Device::Cpu)).contains("empty_quantized"));
    let q = quantize_per_tensor(&x, 1.0, 0, DType::QInt8).unwrap();
    assert!(q.to_vec::<i8>().is_err());
    assert!(q.q_per_channel_axis().is_err());
    assert!(x.dequantize().is_err());
    let s = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let z = Tensor::from_vec(vec![0i64], &[1]).unwrap();
    assert!(msg(quantize_per_channel(&x, &s, &z, 0, DType::QInt8)).contains("one entry per index"));
    assert!(q.to_sparse_coo().is_err());
    // The driver refuses an integer row feeding a quantized output.
    let i = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    assert!(tensor_ops::add_out(&i, &i, &q).is_err());
}

#[test]
fn safetensors_files_carry_the_quantizer() {
    use tensor_ops::safetensors_io::{load, save};
    let path = std::env::temp_dir().join(format!("tensor_ops_{}_quantized.safetensors", std::process::id()));
    let x = Tensor::from_vec(values(24, 51), &[4, 6]).unwrap();
    let a = quantize_per_tensor(&x, 0.1, 7, DType::QUInt8).unwrap();
    let s = Tensor::from_vec(vec![0.1f64, 0.2 / 3.0, 1e-3, 0.5, 0.25, 1.0 / 7.0], &[6]).unwrap();
    let z = Tensor::from_vec(vec![0i64, 1, 2, 3, -4, 5], &[6]).unwrap();
    let b = quantize_per_channel(&x, &s, &z, 1, DType::QInt32).unwrap();
    // A transposed per-channel tensor is written contiguous, its axis moved with it.
    save(&path, &[("a", &a), ("bt", &b.t().unwrap()), ("x", &x)]).unwrap();
    let loaded = load(&path).unwrap();
    let get = |n: &str| loaded.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_eq!(get("a").quantizer(), a.quantizer());
    assert_eq!(ints(&get("a")), ints(&a));
    let bt = get("bt");
    assert_eq!(bt.quantizer(), b.t().unwrap().quantizer());
    assert_eq!(bt.q_per_channel_axis().unwrap(), 0);
    assert_eq!(f32s(&bt.dequantize().unwrap()), f32s(&b.t().unwrap().dequantize().unwrap().contiguous().unwrap()));
    assert_eq!(get("x").quantizer(), None);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn quantized_tensors_print_their_values_and_quantizer() {
    let x = Tensor::from_vec(vec![0.5f32, -0.25], &[2]).unwrap();
    let q = quantize_per_tensor(&x, 0.25, 2, DType::QInt8).unwrap();
    assert_eq!(
        q.to_string(),
        "tensor([ 0.5000, -0.2500], dtype=qint8, quantizer=qint8 per tensor (scale 0.25, zero point 2))"
    );
    assert!(q.to_dlpack().is_err());
}

/// Large unary maps (past the CPU's byte-table threshold: a qint8/quint8 → qint8/quint8 map
/// runs through a 256-entry table built by the op itself, `relu` with the input's quantizer
/// as a byte max) equal the model and the same op over small slices, contiguous,
/// transposed, in place and into another quantizer.
#[test]
fn large_unary_maps_equal_the_model_and_small_calls() {
    let (rows, cols) = (512usize, 256usize);
    let x = Tensor::from_vec(values(rows * cols, 41), &[rows, cols]).unwrap();
    for (d, scale, zp) in [(DType::QInt8, 0.1, -5), (DType::QUInt8, 0.2, 128), (DType::QUInt8, 0.05, 0)] {
        let q = quantize_per_tensor(&x, scale, zp, d).unwrap();
        let v = f32s(&q.dequantize().unwrap());
        let relu_want: Vec<i64> = v.iter().map(|&v| model_q(v.max(0.0), scale, zp, d)).collect();
        assert_eq!(ints(&tensor_ops::relu(&q).unwrap()), relu_want, "{d} relu");
        let c = q.deep_clone().unwrap();
        tensor_ops::relu_(&c).unwrap();
        assert_eq!(ints(&c), relu_want, "{d} relu_");
        let t = tensor_ops::relu(&q.t().unwrap()).unwrap();
        assert_eq!(ints(&t.t().unwrap().contiguous().unwrap()), relu_want, "{d} relu of a transpose");
        let other = Quantizer::per_tensor(DType::QInt8, 0.3, 7).unwrap();
        let out = Tensor::empty_quantized(&[rows, cols], &other, Device::Cpu).unwrap();
        tensor_ops::relu_out(&q, &out).unwrap();
        let want: Vec<i64> = v.iter().map(|&v| model_q(v.max(0.0), 0.3, 7, DType::QInt8)).collect();
        assert_eq!(ints(&out), want, "{d} relu_out into another quantizer");
        // Every op gives what it gives on small calls (the driver's own passes).
        for (what, op) in [
            ("neg", tensor_ops::neg as fn(&Tensor) -> tensor_ops::Result<Tensor>),
            ("sigmoid", tensor_ops::sigmoid),
            ("tanh", tensor_ops::tanh),
        ] {
            let big = ints(&op(&q).unwrap());
            let small: Vec<i64> = (0..rows).flat_map(|r| ints(&op(&q.select(0, r).unwrap()).unwrap())).collect();
            assert_eq!(big, small, "{d} {what}");
        }
    }
}
