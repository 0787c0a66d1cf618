//! Definitions that must compile outside the ops crate, and run: what were trybuild `pass`
//! cases (`macro_ui.rs` now holds only `compile_fail` cases, so trybuild runs `cargo check`
//! instead of building every dependency a second time). The wrong definitions and their
//! spanned errors stay in `tests/ui/fail`.

mod bool_and_int_edges {
    //! `T::from_bool` (the fix the macro suggests for a bool param), i64::MIN as a literal, and
    //! total integer arithmetic on params.
    use tensor_ops::prelude::*;

    /// `x` plus 1 where `on`, the bool param as a value of `T`.
    #[tensor_op(dtypes = [all])]
    pub fn plus_flag<T>(x: T, #[param] on: bool) -> T {
        x + T::from_bool(on) * T::from_bool(true) + T::from_bool(false)
    }

    /// Integer param arithmetic that would panic with Rust's own operators.
    #[tensor_op(dtypes = [i64])]
    pub fn edges<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
        x + T::from_i64(n / d + n * d + -n) + T::from_i64(-9223372036854775808)
    }

    #[test]
    fn bool_params_and_integer_edges_compute_as_documented() {
        let x = Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap();
        assert_eq!(plus_flag(&x, true).unwrap().to_vec::<f32>().unwrap(), vec![2.5, -1.0]);
        assert_eq!(plus_flag(&x, false).unwrap().to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
        let b = Tensor::from_vec(vec![false, true], &[2]).unwrap();
        assert_eq!(plus_flag(&b, true).unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
        let z = Tensor::from_vec(vec![0i64], &[1]).unwrap();
        // d = 0: n / 0 == 0, n * 0 == 0, -n wraps for MIN
        let got = edges(&z, i64::MIN, 0).unwrap().to_vec::<i64>().unwrap();
        assert_eq!(got, vec![i64::MIN.wrapping_neg().wrapping_add(i64::MIN)]);
    }
}

mod many_features {
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
            let s = {
                let t = x.sqrt().ln();
                t.recip()
            };
            (x + s * T::zero()).powf(T::one()).floor().ceil().round() + x.sin() * x.cos() * 0.0 + x.exp2().log2() * 0.0
        }
    }

    /// Integer-friendly ops.
    #[tensor_op(dtypes = [all])]
    fn mix<T>(a: T, b: T, #[param] swap: bool, #[param] k: i64) -> T {
        if swap && a != b || !(a == b) {
            b.pow(T::one())
        } else {
            (a - b).abs() * 2 + T::from_i64(k) / -T::one()
        }
    }

    /// A predicate with a bool literal.
    #[tensor_op(dtypes = [numeric, bool])]
    pub fn never<T: Element>(x: T, y: T) -> bool {
        if x > y {
            false
        } else {
            x != x
        }
    }

    #[test]
    fn every_body_construct_registers_on_cpu_and_cuda() {
        let reg = tensor_ops::registry();
        let floats = DType::ALL.iter().filter(|d| d.is_float()).count();
        for (op, n) in [("ui_soft_clamp", floats), ("mix", DType::ALL.len()), ("never", DType::ALL.len())] {
            for dev in [DeviceKind::Cpu, DeviceKind::Cuda] {
                assert_eq!(reg.row_set(op, dev, Layout::Strided).unwrap().dtypes().len(), n, "{op}");
            }
        }
        let _: fn(&Tensor, f32, f64) -> Result<Tensor> = soft_clamp;
        let _: fn(&Tensor, &Tensor, bool, i64, &Tensor) -> Result<()> = mix_out;
        let _: fn(&Tensor, &Tensor) -> Result<()> = never_;
    }
}
