//! The internal-overlap rule against brute force: enumerate every index's offset and look
//! for a repeat, over random shapes and strides (negative and zero included).

use proptest::prelude::*;
use std::collections::HashSet;
use tensor_core::overlap::{internal_overlap, Overlap};
use tensor_core::{DType, Device, Tensor};

/// True when two different indices of the view reach one offset.
fn brute_force(shape: &[usize], strides: &[isize]) -> bool {
    let numel: usize = shape.iter().product();
    let mut seen = HashSet::new();
    for flat in 0..numel {
        let (mut rest, mut offset) = (flat, 0isize);
        for d in (0..shape.len()).rev() {
            offset += (rest % shape[d]) as isize * strides[d];
            rest /= shape[d];
        }
        if !seen.insert(offset) {
            return true;
        }
    }
    false
}

fn view_strategy() -> impl Strategy<Value = (Vec<usize>, Vec<isize>)> {
    (0usize..=4).prop_flat_map(|rank| {
        (proptest::collection::vec(0usize..6, rank), proptest::collection::vec(-13isize..=13, rank))
    })
}

proptest! {
    // Miri: few cases, and no failure file (it has no file system access).
    #![proptest_config(if cfg!(miri) {
        ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig::with_cases(4000)
    })]

    #[test]
    fn rule_matches_brute_force((shape, strides) in view_strategy()) {
        let got = internal_overlap(&shape, &strides);
        prop_assert_eq!(got.is_overlapping(), brute_force(&shape, &strides), "{:?} {:?} -> {:?}", shape, strides, got);
        if let Overlap::Expanded { dim } = got {
            prop_assert!(strides[dim] == 0 && shape[dim] > 1);
        }
    }
}

/// Views made with `as_strided` over a big enough storage agree with brute force too, and
/// `fill_` succeeds exactly when there is no overlap.
#[test]
fn fill_refuses_exactly_the_overlapping_views() {
    let base = Tensor::zeros(&[4096], DType::I32, Device::Cpu).unwrap();
    let cases: &[(&[usize], &[isize])] = &[
        (&[3, 4, 3], &[21, 6, 1]),
        (&[3, 2], &[2, 3]),
        (&[2, 3], &[1, 1]),
        (&[2, 2, 2], &[4, 3, 1]),
        (&[5, 5], &[5, 1]),
        (&[5, 5], &[4, 1]),
        (&[4, 3], &[0, 1]),
        (&[2, 3, 4], &[1, 2, 6]),
    ];
    for &(shape, strides) in cases {
        let view = base.as_strided(shape, strides, 0).unwrap();
        let overlaps = brute_force(shape, strides);
        assert_eq!(view.has_internal_overlap(), overlaps, "{shape:?} {strides:?}");
        let res = view.fill_(7);
        assert_eq!(res.is_err(), overlaps, "{shape:?} {strides:?}: {res:?}");
        if let Err(e) = res {
            let msg = e.to_string();
            assert!(msg.contains("fill_") && msg.contains(&format!("{strides:?}")), "{msg}");
            let expanded = strides.contains(&0);
            assert_eq!(msg.contains("expanded view"), expanded, "{msg}");
        }
    }
}

/// The case: a step-2 slice along the middle dim of a 3-D tensor.
#[test]
fn stepped_middle_slice_is_writable() {
    let t = Tensor::zeros(&[3, 7, 3], DType::F32, Device::Cpu).unwrap();
    let v = t.slice(1, 0, 7, 2).unwrap();
    assert_eq!(v.shape(), &[3, 4, 3]);
    assert_eq!(v.strides(), &[21, 6, 1]);
    assert!(!v.has_internal_overlap());
    v.fill_(1.0f32).unwrap();
    v.copy_(&Tensor::ones(&[3, 4, 3], DType::F64, Device::Cpu).unwrap()).unwrap();
    let expect: Vec<f32> = (0..63).map(|i| if (i / 3) % 7 % 2 == 0 { 1.0 } else { 0.0 }).collect();
    assert_eq!(t.to_vec::<f32>().unwrap(), expect);
}
