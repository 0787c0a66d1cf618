//! The quantized dtypes on `Device::Cuda`, bit for bit with the CPU (which
//! tests/tests/quantized.rs checks against the model and PyTorch's results): quantizing and
//! dequantizing per tensor and per channel, requantizing copies, fills, maps with quantized
//! inputs and outputs through the contiguous, strided and tiled kernels, reductions, and
//! moving quantized tensors between devices. Outputs start poisoned.

use super::DEV;
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor, Quantizer};

fn ints(t: &Tensor) -> Vec<i64> {
    let r = t.int_repr().unwrap().to_device(Device::Cpu).unwrap().to_dtype(DType::I64).unwrap();
    r.to_vec::<i64>().unwrap()
}

fn f32_bits(t: &Tensor) -> Vec<u32> {
    t.to_device(Device::Cpu).unwrap().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let h = (i.wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)) % 4001;
            match i % 13 {
                0 => (i % 50) as f32 * 0.5 + 0.25, // ties at scale 0.5
                1 => f32::NAN,
                2 => 1e9,
                _ => h as f32 / 40.0 - 50.0,
            }
        })
        .collect()
}

pub fn quantized_tensors_match_the_cpu_bit_for_bit() {
    let x = Tensor::from_vec(data(6 * 70, 1), &[6, 70]).unwrap();
    let gx = x.to_device(DEV).unwrap();
    for d in [DType::QInt8, DType::QUInt8, DType::QInt32] {
        let zp = if d == DType::QUInt8 { 100 } else { -3 };
        // quantize / dequantize per tensor, of a strided source
        let cq = quantize_per_tensor(&x.t().unwrap(), 0.5, zp, d).unwrap();
        let gq = quantize_per_tensor(&gx.t().unwrap(), 0.5, zp, d).unwrap();
        assert_eq!((gq.device(), gq.quantizer()), (DEV, cq.quantizer()));
        assert_eq!(ints(&gq), ints(&cq), "{d} quantize");
        assert_eq!(f32_bits(&gq.dequantize().unwrap()), f32_bits(&cq.dequantize().unwrap()), "{d} dequantize");
        // per channel along each axis
        for axis in 0..2 {
            let c = x.shape()[axis];
            let s = Tensor::from_vec((0..c).map(|i| 0.05 + 0.1 * i as f64).collect::<Vec<_>>(), &[c]).unwrap();
            let z = Tensor::from_vec((0..c).map(|i| (i % 5) as i64).collect::<Vec<_>>(), &[c]).unwrap();
            let cp = quantize_per_channel(&x, &s, &z, axis, d).unwrap();
            let gp = quantize_per_channel(&gx, &s, &z, axis, d).unwrap();
            assert_eq!(ints(&gp), ints(&cp), "{d} per channel axis {axis}");
            let (gd, cd) = (gp.dequantize().unwrap(), cp.dequantize().unwrap());
            assert_eq!(f32_bits(&gd), f32_bits(&cd), "{d} per channel dequantize axis {axis}");
        }
        // maps: relu keeps the quantizer; add into a chosen quantizer through a transposed
        // output (the tiled kernel) and a broadcast input; a predicate
        let (ca, ga) = (quantize_per_tensor(&x, 0.25, zp, d).unwrap(), quantize_per_tensor(&gx, 0.25, zp, d).unwrap());
        assert_eq!(ints(&tensor_ops::relu(&ga).unwrap()), ints(&tensor_ops::relu(&ca).unwrap()), "{d} relu");
        let row = Tensor::from_vec(data(70, 2), &[70]).unwrap();
        let (cb, gb) = (
            quantize_per_tensor(&row, 0.1, 0, DType::QInt8).unwrap(),
            quantize_per_tensor(&row.to_device(DEV).unwrap(), 0.1, 0, DType::QInt8).unwrap(),
        );
        let oq = Quantizer::per_tensor(d, 0.3, zp).unwrap();
        let co = Tensor::empty_quantized(&[70, 6], &oq, Device::Cpu).unwrap().t().unwrap();
        let go = Tensor::empty_quantized(&[70, 6], &oq, DEV).unwrap().t().unwrap();
        go.fill_(7.0).unwrap();
        tensor_ops::add_out(&ca, &cb, &co).unwrap();
        tensor_ops::add_out(&ga, &gb, &go).unwrap();
        assert_eq!(ints(&go), ints(&co), "{d} add_out");
        let (cs, gs) = (tensor_ops::sigmoid(&ca).unwrap(), tensor_ops::sigmoid(&ga).unwrap());
        // sigmoid's f32 result may differ by an ulp between devices: at most one step after rounding
        let close = ints(&gs).iter().zip(ints(&cs)).all(|(g, c)| (g - c).abs() <= 1);
        assert!(close, "{d} sigmoid");
        let gt = tensor_ops::gt(&ga, &gb).unwrap().to_device(Device::Cpu).unwrap();
        assert_eq!(gt.to_vec::<bool>().unwrap(), tensor_ops::gt(&ca, &cb).unwrap().to_vec::<bool>().unwrap());
        // requantizing copy, fill, reductions, and the way back to the host
        let rq = Quantizer::per_tensor(DType::QUInt8, 0.7, 128).unwrap();
        let (cr, gr) = (
            Tensor::empty_quantized(&[6, 70], &rq, Device::Cpu).unwrap(),
            Tensor::empty_quantized(&[6, 70], &rq, DEV).unwrap(),
        );
        cr.copy_(&ca).unwrap();
        gr.copy_(&ga).unwrap();
        assert_eq!(ints(&gr), ints(&cr), "{d} requantize");
        gr.fill_(-2.3).unwrap();
        cr.fill_(-2.3).unwrap();
        assert_eq!(ints(&gr), ints(&cr), "{d} fill");
        // f32 sums in another order: within a few ulps of the row's sum of magnitudes
        let (csum, gsum) = (ca.sum(&[1], false).unwrap(), ga.sum(&[1], false).unwrap());
        let (cv, gv) = (csum.to_vec::<f32>().unwrap(), gsum.to_device(Device::Cpu).unwrap().to_vec::<f32>().unwrap());
        let mags = tensor_ops::abs(&ca.dequantize().unwrap()).unwrap().sum(&[1], false).unwrap();
        for ((c, g), m) in cv.iter().zip(&gv).zip(mags.to_vec::<f32>().unwrap()) {
            assert!((c - g).abs() <= 1e-5 * m.max(1.0), "{d} sum: cpu {c}, cuda {g}");
        }
        let (cm, gm) = (ca.amax(&[0], false).unwrap(), ga.amax(&[0], false).unwrap());
        assert_eq!(f32_bits(&gm), f32_bits(&cm), "{d} amax");
        let back = ga.to_device(Device::Cpu).unwrap();
        assert_eq!((back.quantizer(), ints(&back)), (ca.quantizer(), ints(&ca)));
    }
}
