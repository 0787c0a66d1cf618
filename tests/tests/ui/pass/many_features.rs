//! Every construct of the body language, on several dtype groups, outside the ops crate.

use tensor_ops::prelude::*;
use tensor_ops::tensor_core::DeviceKind;

/// A smooth-ish clamp.
#[tensor_op(name = "ui_soft_clamp", dtypes = [float])]
pub fn soft_clamp<T: Float>(x: T, #[param] lo: f32, #[param] hi: f64) -> T {
    let l: T = T::from_f32(lo * 2.0 - 1.0);
    let h = T::from_f64(hi);
    if x < l {
        l + (x - l).exp() * 0.0
    } else if x > h {
        h.min(x.tanh().max(-h))
    } else {
        let s = { let t = x.sqrt().ln(); t.recip() };
        (x + s * T::zero()).powf(T::one()).floor().ceil().round() + x.sin() * x.cos() * 0.0 + x.exp2().log2() * 0.0
    }
}

/// Integer-friendly ops.
#[tensor_op(dtypes = [all])]
fn mix<T>(a: T, b: T, #[param] swap: bool, #[param] k: i64) -> T {
    if swap && a != b || !(a == b) { b.pow(T::one()) } else { (a - b).abs() * 2 + T::from_i64(k) / -T::one() }
}

/// A predicate with a bool literal.
#[tensor_op(debug, dtypes = [numeric, bool])]
pub fn never<T: Element>(x: T, y: T) -> bool {
    if x > y { false } else { x != x }
}

fn main() {
    let reg = tensor_ops::registry();
    for (op, n) in [("ui_soft_clamp", 4), ("mix", 10), ("never", 10)] {
        for dev in [DeviceKind::Cpu, DeviceKind::Cuda] {
            assert_eq!(reg.row_set(op, dev, Layout::Strided).unwrap().dtypes().len(), n, "{op}");
        }
    }
    let _: fn(&Tensor, f32, f64) -> Result<Tensor> = soft_clamp;
    let _: fn(&Tensor, &Tensor, bool, i64, &Tensor) -> Result<()> = mix_out;
    let _: fn(&Tensor, &Tensor) -> Result<()> = never_;
}
