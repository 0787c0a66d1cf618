//! The 8-bit floats on `Device::Cuda`, bit for bit with the CPU (which tests/tests/f8.rs and
//! tensor-core check against the scalar model and PyTorch's results): every bit pattern of
//! each f8 dtype cast to every dtype on the device, values of every dtype around the f8
//! rounding boundaries cast to f8, maps in f8 through the contiguous and the strided
//! kernels, a fused chain, and reductions. Outputs start poisoned.

use super::{device_view, DEV};
use crate::common::{bits, input, poison, Lay};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;
use tensor_ops::{F8E4M3, F8E5M2};

const F8: [DType; 2] = [DType::F8E4M3, DType::F8E5M2];

fn every_pattern(d: DType) -> Tensor {
    if d == DType::F8E4M3 {
        Tensor::from_vec((0..=255u8).map(F8E4M3::from_bits).collect::<Vec<_>>(), &[256]).unwrap()
    } else {
        Tensor::from_vec((0..=255u8).map(F8E5M2::from_bits).collect::<Vec<_>>(), &[256]).unwrap()
    }
}

/// The bits of `t`, with every NaN of a non-f8 float dtype as one marker: the f8 casts are
/// ours on both devices (NaN keeps its sign, `0x7f`), while f16/bf16 NaNs come from CUDA's
/// `__float2half_rn` (`0x7fff`) or `half` (`0x7e00`), as before f8.
fn bits_nan_as_one(t: &Tensor) -> Vec<u64> {
    let b = bits(t);
    if !t.dtype().is_float() || t.dtype().size() == 1 {
        return b;
    }
    let vals = t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    b.into_iter().zip(vals).map(|(b, v)| if v.is_nan() { u64::MAX } else { b }).collect()
}

/// The bits of a computed f8 result with NaN's sign dropped: a GPU's arithmetic returns its
/// canonical (positive) NaN where the CPU's keeps or sets the sign.
fn computed_bits(t: &Tensor) -> Vec<u64> {
    bits(t).into_iter().map(|b| if b & 0x7f == 0x7f { 0x7f } else { b }).collect()
}

/// `x.to_dtype(to)` on the device, through a poisoned `copy_` and a new tensor, against the
/// CPU's bits.
fn cast_matches(x: &Tensor, to: DType, what: &str) {
    let want = bits_nan_as_one(&x.to_dtype(to).unwrap());
    let g = device_view(x, DEV);
    let out = Tensor::empty(x.shape(), to, DEV).unwrap();
    poison(&out);
    out.copy_(&g).unwrap();
    same(&bits_nan_as_one(&out), &want, x, &format!("{what}: copy_ into {to}"));
    same(&bits_nan_as_one(&g.to_dtype(to).unwrap()), &want, x, &format!("{what}: to_dtype({to})"));
}

/// Asserts equal bits, naming the first element that differs and its source value.
fn same(got: &[u64], want: &[u64], src: &Tensor, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let s = src.contiguous().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()[i];
        let raw = bits(&src.contiguous().unwrap())[i];
        panic!("{what}: element {i} (source {s:e}, bits {raw:#x}): got {:#x}, want {:#x}", got[i], want[i]);
    }
}

pub fn f8_casts_and_maps_match_the_cpu_bit_for_bit() {
    for d in F8 {
        let all = every_pattern(d);
        for to in DType::ALL {
            cast_matches(&all, to, &format!("every {d} pattern"));
        }
        // Every dtype into f8: values around every f8 value (the rounding boundaries), and
        // the overflow thresholds; a strided source too.
        let mut xs: Vec<f64> =
            vec![464.0, 480.0, 1e4, 61439.0, 61440.0, 1e9, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        for b in 0..=255u8 {
            let v = all.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()[b as usize];
            xs.extend([v, v * 1.03125, v * 0.96875, v * 1.0625, -v * 1.03125]);
        }
        let n = xs.len();
        let wide = Tensor::from_vec(xs, &[n]).unwrap();
        for src in DType::ALL {
            let s = wide.to_dtype(src).unwrap();
            cast_matches(&s, d, &format!("{src} -> {d}"));
            cast_matches(&s.flip(0).unwrap(), d, &format!("flipped {src} -> {d}"));
        }
        // Maps: contiguous (the vector kernel), misaligned, strided and transposed operands.
        for lay in [Lay::Contiguous, Lay::Offset, Lay::Stepped, Lay::Transposed] {
            let a = input(d, &[33, 70], lay, 1);
            let b = input(d, &[33, 70], Lay::Contiguous, 2);
            let (ga, gb) = (device_view(&a, DEV), device_view(&b, DEV));
            let cb = computed_bits;
            assert_eq!(cb(&ga.add(&gb).unwrap()), cb(&a.add(&b).unwrap()), "{d} {lay:?} add");
            assert_eq!(cb(&ga.exp().unwrap()), cb(&a.exp().unwrap()), "{d} {lay:?} exp");
            assert_eq!(cb(&ga.relu().unwrap()), cb(&a.relu().unwrap()), "{d} {lay:?} relu");
            let out = Tensor::empty(&[33, 70], d, DEV).unwrap();
            poison(&out);
            tensor_ops::mul_out(&ga, &gb, &out).unwrap();
            assert_eq!(cb(&out), cb(&a.mul(&b).unwrap()), "{d} {lay:?} mul_out");
            let chain = (&(&Expr::input(&ga) * &Expr::input(&gb)) + &Expr::input(&ga)).relu();
            let eager = a.mul(&b).unwrap().add(&a).unwrap().relu().unwrap();
            assert_eq!(cb(&chain.eval().unwrap()), cb(&eager), "{d} {lay:?} fused chain");
            assert_eq!(cb(&ga.amax(&[0], false).unwrap()), cb(&a.amax(&[0], false).unwrap()), "{d} {lay:?} amax");
            assert_eq!(bits(&ga.argmax(1, false).unwrap()), bits(&a.argmax(1, false).unwrap()), "{d} {lay:?} argmax");
        }
        let f = Tensor::empty(&[5], d, DEV).unwrap();
        f.fill_(0.3).unwrap();
        assert_eq!(bits(&f), bits(&Tensor::full(&[5], 0.3, d, Device::Cpu).unwrap()), "{d} fill");
    }
}
