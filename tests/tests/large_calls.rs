//! Calls large enough for the DRAM-size paths (outputs of 16 MiB and more are streamed with
//! non-temporal stores; f16/bf16 outputs are converted in cache first), checked element by
//! element against a scalar reference, with poisoned outputs so unwritten elements show.

use half::{bf16, f16};
use tensor_ops::prelude::*;
use tensor_ops::tensor_core::Element;

/// Elements of a 2-byte output just above the 16 MiB streaming threshold, plus a ragged
/// tail that is not a multiple of any block or vector width.
const N: usize = (16 << 20) / 2 + 1237;

fn tensor<T: Element>(v: Vec<T>) -> Tensor {
    Tensor::from_vec(v, &[N]).unwrap()
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let a = (0..N).map(|i| ((i % 2003) as f32 - 1000.0) * 0.37).collect();
    let b = (0..N).map(|i| ((i % 997) as f32) * 0.011 - 3.0).collect();
    (a, b)
}

#[test]
fn f16_add_streamed_matches_the_reference() {
    let (a, b) = inputs();
    let (a, b): (Vec<f16>, Vec<f16>) =
        (a.iter().map(|&x| f16::from_f32(x)).collect(), b.iter().map(|&x| f16::from_f32(x)).collect());
    let want: Vec<f16> = a.iter().zip(&b).map(|(x, y)| f16::from_f32(x.to_f32() + y.to_f32())).collect();
    let (ta, tb) = (tensor(a), tensor(b));
    assert_eq!(ta.add(&tb).unwrap().to_vec::<f16>().unwrap(), want, "new output");
    let out = Tensor::full(&[N], f32::NAN, DType::F16, Device::Cpu).unwrap();
    tensor_ops::add_out(&ta, &tb, &out).unwrap();
    let got = out.to_vec::<f16>().unwrap();
    let bad = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
    assert_eq!(bad, None, "preallocated output differs at {bad:?}");
}

#[test]
fn bf16_exp_and_mixed_add_streamed_match_the_reference() {
    let (a, b) = inputs();
    let a: Vec<bf16> = a.iter().map(|&x| bf16::from_f32(x * 0.01)).collect();
    let want: Vec<bf16> = a.iter().map(|x| bf16::from_f32(x.to_f32().exp())).collect();
    let got = tensor(a.clone()).exp().unwrap().to_vec::<bf16>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // exp is 1-ulp accurate in f32; rounding to bf16 can then differ by one bf16 ulp.
        let d = (g.to_bits() as i32 - w.to_bits() as i32).abs();
        assert!(d <= 1, "exp at {i}: got {g}, want {w}");
    }
    // bf16 + f32 promotes to f32 (a contiguous f32 output, converted input).
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x.to_f32() + y).collect();
    assert_eq!(tensor(a).add(&tensor(b)).unwrap().to_vec::<f32>().unwrap(), want);
}

#[test]
fn f32_add_into_f16_output_is_cast_on_store() {
    let (a, b) = inputs();
    let want: Vec<f16> = a.iter().zip(&b).map(|(x, y)| f16::from_f32(x + y)).collect();
    let out = Tensor::full(&[N], f32::NAN, DType::F16, Device::Cpu).unwrap();
    tensor_ops::add_out(&tensor(a), &tensor(b), &out).unwrap();
    assert_eq!(out.to_vec::<f16>().unwrap(), want);
}

#[test]
fn f32_maps_streamed_in_short_blocks_match_the_reference() {
    let (a, b) = inputs();
    let (ta, tb) = (tensor(a.clone()), tensor(b.clone()));
    // Two inputs from memory (the short streamed blocks), a new output.
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    assert_eq!(ta.mul(&tb).unwrap().to_vec::<f32>().unwrap(), want, "mul, new output");
    // Into a poisoned output whose first element is not 16-byte aligned (streamed head,
    // body and tail), from inputs narrowed the same way.
    let n = N - 3;
    let out = Tensor::full(&[N], f32::NAN, DType::F32, Device::Cpu).unwrap();
    let (oa, ob, oo) = (ta.narrow(0, 1, n).unwrap(), tb.narrow(0, 2, n).unwrap(), out.narrow(0, 3, n).unwrap());
    tensor_ops::add_out(&oa, &ob, &oo).unwrap();
    let got = out.to_vec::<f32>().unwrap();
    let want: Vec<f32> = (0..n).map(|i| a[i + 1] + b[i + 2]).collect();
    assert!(got[..3].iter().all(|x| x.is_nan()), "elements before the view were written");
    let bad = got[3..].iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
    assert_eq!(bad, None, "add_out differs at {bad:?}");
    // One input from memory and a broadcast scalar (the longer blocks).
    let two = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let want: Vec<f32> = a.iter().map(|x| x - 2.0).collect();
    assert_eq!(ta.sub(&two).unwrap().to_vec::<f32>().unwrap(), want, "sub of a broadcast scalar");
}

#[test]
fn f64_and_mixed_width_maps_streamed_in_short_blocks_match_the_reference() {
    let (a, b) = inputs();
    let (a, b): (Vec<f64>, Vec<f64>) = (a.iter().map(|&x| x as f64).collect(), b.iter().map(|&x| x as f64).collect());
    // Two f64 inputs from memory, a 64 MiB output: 128-element streamed blocks.
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let got = tensor(a.clone()).sub(&tensor(b.clone())).unwrap().to_vec::<f64>().unwrap();
    let bad = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
    assert_eq!(bad, None, "f64 sub differs at {bad:?}");
    // f64 inputs into a poisoned f32 output (cast on store, 32 MiB streamed).
    let out = Tensor::full(&[N], f32::NAN, DType::F32, Device::Cpu).unwrap();
    tensor_ops::mul_out(&tensor(a.clone()), &tensor(b.clone()), &out).unwrap();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x * y) as f32).collect();
    assert_eq!(out.to_vec::<f32>().unwrap(), want, "f64 mul into f32");
}

#[test]
fn outputs_streamed_from_the_registers_match_the_reference_at_every_alignment() {
    // Outputs of the kernel's own dtype at a 16-byte-aligned address take the block loop's
    // streaming stores; any other address the staged copy. A 16-byte but not 64-byte
    // aligned start, an unaligned one, and bool outputs (16 lanes = one 16-byte piece).
    let (a, b) = inputs();
    let (ta, tb) = (tensor(a.clone()), tensor(b.clone()));
    for skip in [0usize, 1, 4, 5] {
        let n = N - skip;
        let out = Tensor::full(&[N], f32::NAN, DType::F32, Device::Cpu).unwrap();
        let view = out.narrow(0, skip, n).unwrap();
        tensor_ops::mul_out(&ta.narrow(0, 0, n).unwrap(), &tb.narrow(0, 0, n).unwrap(), &view).unwrap();
        let got = out.to_vec::<f32>().unwrap();
        assert!(got[..skip].iter().all(|x| x.is_nan()), "skip {skip}: elements before the view were written");
        let bad = (0..n).find(|&i| got[skip + i].to_bits() != (a[i] * b[i]).to_bits());
        assert_eq!(bad, None, "skip {skip}: mul_out differs at {bad:?}");
    }
    // Bool outputs of 32 MiB: a comparison streamed into a new output and into views.
    let (a2, b2): (Vec<f32>, Vec<f32>) = (a.iter().chain(&a).copied().collect(), b.iter().chain(&b).copied().collect());
    let m = 2 * N;
    let (ta2, tb2) = (Tensor::from_vec(a2.clone(), &[m]).unwrap(), Tensor::from_vec(b2.clone(), &[m]).unwrap());
    let want: Vec<bool> = a2.iter().zip(&b2).map(|(x, y)| x < y).collect();
    assert_eq!(ta2.lt(&tb2).unwrap().to_vec::<bool>().unwrap(), want, "lt, new bool output");
    for skip in [16usize, 17] {
        let n = m - skip;
        let out = Tensor::full(&[m], true, DType::Bool, Device::Cpu).unwrap();
        tensor_ops::lt_out(
            &ta2.narrow(0, 0, n).unwrap(),
            &tb2.narrow(0, 0, n).unwrap(),
            &out.narrow(0, skip, n).unwrap(),
        )
        .unwrap();
        let got = out.to_vec::<bool>().unwrap();
        assert!(got[..skip].iter().all(|&x| x), "skip {skip}: elements before the view were written");
        assert!(got[skip..] == want[..n], "skip {skip}: lt_out differs");
    }
}
