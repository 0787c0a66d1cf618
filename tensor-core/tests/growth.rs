//! Caffe2-style growth: resize_, reserve, extend_, shrink_to, share_data.

mod common;

use common::{assert_err_names, config};
use proptest::prelude::*;
use tensor_core::{DType, Device, Error, Tensor};

fn iota(n: usize) -> Tensor {
    Tensor::from_vec((0..n as i32).collect(), &[n]).unwrap()
}

#[test]
fn resize_keeps_storage_when_it_fits() {
    let mut t = iota(12);
    let before = t.storage().clone();
    t.resize_(&[3, 4]).unwrap();
    assert!(t.storage().same(&before));
    assert_eq!(t.strides(), &[4, 1]);
    assert_eq!(t.to_vec::<i32>().unwrap(), (0..12).collect::<Vec<_>>());
    t.resize_(&[2, 2]).unwrap(); // small buffer: keep on shrink
    assert!(t.storage().same(&before));
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3]);
    t.resize_(&[12]).unwrap(); // grows back within capacity: the bytes are still there
    assert!(t.storage().same(&before));
    assert_eq!(t.to_vec::<i32>().unwrap(), (0..12).collect::<Vec<_>>());
    t.resize_(&[0]).unwrap();
    assert!(t.storage().same(&before));
    t.resize_(&[]).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0]);
}

#[test]
fn resize_reallocates_lazily_without_data_when_too_small() {
    let mut t = iota(4);
    let old = t.storage().clone();
    t.resize_(&[5]).unwrap();
    assert!(!t.storage().same(&old));
    assert!(!t.storage().is_allocated(), "the new storage is lazy");
    assert_eq!(t.storage().capacity_elems(), 5);
    assert_eq!(t.storage_offset(), 0);
    // Other handles keep the old storage and data.
    assert_eq!(old.use_count(), 1);
}

#[test]
fn resize_respects_the_storage_offset() {
    let whole = iota(10);
    let mut t = whole.narrow(0, 6, 2).unwrap();
    t.resize_(&[4]).unwrap(); // 6 + 4 <= 10: kept, shared
    assert!(t.shares_storage(&whole));
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![6, 7, 8, 9]);
    t.resize_(&[5]).unwrap(); // 6 + 5 > 10: reallocated, detached
    assert!(!t.shares_storage(&whole));
    assert_eq!(whole.to_vec::<i32>().unwrap(), (0..10).collect::<Vec<_>>());
}

#[test]
fn resize_big_shrink_reallocates() {
    // Lazy storage: nothing is allocated, so this is cheap (and fine under Miri).
    let cap = Tensor::KEEP_ON_SHRINK_MAX_BYTES / 4 + 16;
    let mut t = Tensor::empty(&[cap], DType::F32, Device::Cpu).unwrap();
    let old = t.storage().clone();
    t.resize_(&[cap / 2 + 8]).unwrap(); // more than half: kept
    assert!(t.storage().same(&old));
    t.resize_(&[cap / 4]).unwrap(); // less than half of a big buffer: released
    assert!(!t.storage().same(&old));
    assert_eq!(t.storage().capacity_elems(), cap / 4);
    assert!(!t.storage().is_allocated());
}

#[test]
fn reserve_grows_capacity_and_keeps_data() {
    let whole = iota(6);
    let mut t = whole.narrow(0, 2, 3).unwrap();
    t.reserve(8).unwrap(); // 4 elements from offset 2 already fit: no-op
    assert!(t.shares_storage(&whole));
    t.reserve(40).unwrap(); // 10 elements
    assert!(!t.shares_storage(&whole));
    assert_eq!(t.storage().capacity_bytes(), 40);
    assert_eq!(t.storage_offset(), 0);
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![2, 3, 4]);
    // Growing afterwards needs no reallocation.
    let s = t.storage().clone();
    t.resize_(&[10]).unwrap();
    assert!(t.storage().same(&s));
    assert_eq!(&t.to_vec::<i32>().unwrap()[..3], &[2, 3, 4]);
    // Odd byte counts round up to whole elements.
    let mut u = iota(1);
    u.reserve(5).unwrap();
    assert_eq!(u.storage().capacity_elems(), 2);
}

#[test]
fn reserve_of_a_lazy_tensor_stays_lazy() {
    let mut t = Tensor::empty(&[2, 2], DType::F64, Device::Cpu).unwrap();
    t.reserve(1024).unwrap();
    assert!(!t.storage().is_allocated());
    assert_eq!(t.storage().capacity_bytes(), 1024);
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![0.0; 4]);
}

#[test]
fn extend_is_amortized_and_keeps_data() {
    let mut t = Tensor::from_vec(vec![1i64, 2], &[1, 2]).unwrap();
    let mut reallocations = 0;
    let mut last = t.storage().clone();
    for row in 1..100i64 {
        t.extend_(1, 50).unwrap();
        if !t.storage().same(&last) {
            reallocations += 1;
            last = t.storage().clone();
        }
        t.select(0, row as usize).unwrap().fill_(row + 1).unwrap();
    }
    assert_eq!(t.shape(), &[100, 2]);
    let v = t.to_vec::<i64>().unwrap();
    assert_eq!(&v[..2], &[1, 2]);
    for row in 1..100 {
        assert_eq!(v[2 * row], row as i64 + 1);
    }
    // 1.5x growth: far fewer reallocations than rows (amortized O(1)).
    assert!(reallocations <= 12, "{reallocations} reallocations");
}

#[test]
fn extend_capacity_rule() {
    let mut t = iota(10).view(&[5, 2]).unwrap();
    t.extend_(1, 100).unwrap(); // max(12, 10 * 2) = 20
    assert_eq!(t.storage().capacity_elems(), 20);
    assert_eq!(t.shape(), &[6, 2]);
    t.extend_(4, 0).unwrap(); // 20 fits
    assert_eq!(t.storage().capacity_elems(), 20);
    t.extend_(5, 0).unwrap(); // max(30, 20) = 30
    assert_eq!(t.storage().capacity_elems(), 30);
    assert_eq!(&t.to_vec::<i32>().unwrap()[..10], &(0..10).collect::<Vec<_>>()[..]);
}

#[test]
fn shrink_to_never_reallocates() {
    let mut t = iota(6).view(&[3, 2]).unwrap();
    let s = t.storage().clone();
    drop(s);
    let cap = t.storage().capacity_bytes();
    t.shrink_to(2).unwrap();
    assert_eq!(t.shape(), &[2, 2]);
    assert_eq!(t.storage().capacity_bytes(), cap);
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3]);
    t.shrink_to(0).unwrap();
    assert_eq!(t.numel(), 0);
}

#[test]
fn share_data_views_the_source() {
    let src = iota(8);
    let mut t = Tensor::zeros(&[2, 4], DType::I32, Device::Cpu).unwrap();
    t.share_data(&src.narrow(0, 0, 8).unwrap()).unwrap();
    assert!(t.shares_storage(&src));
    assert_eq!(t.shape(), &[2, 4]);
    src.fill_(3).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![3; 8]);
    // offset is taken from the source; dtype follows the storage (as Caffe2)
    let src = Tensor::from_vec(vec![0f64, 1., 2., 3.], &[4]).unwrap().narrow(0, 2, 2).unwrap();
    let mut u = Tensor::empty(&[2, 1], DType::U8, Device::Cpu).unwrap();
    u.share_data(&src).unwrap();
    assert_eq!(u.dtype(), DType::F64);
    assert_eq!(u.storage_offset(), 2);
    assert_eq!(u.to_vec::<f64>().unwrap(), vec![2., 3.]);
}

#[test]
fn growth_errors_name_the_op() {
    let base = iota(6).view(&[2, 3]).unwrap();
    let mut nc = base.t().unwrap();
    for (op, r) in [
        ("resize_", nc.clone().resize_(&[6])),
        ("reserve", nc.clone().reserve(100)),
        ("extend_", nc.clone().extend_(1, 10)),
        ("shrink_to", nc.clone().shrink_to(1)),
        ("share_data", nc.share_data(&iota(6))),
    ] {
        let e = assert_err_names(r, op);
        assert!(e.to_string().contains("contiguous"), "{e}");
    }
    // non-contiguous source of share_data
    let mut t = iota(6);
    let e = assert_err_names(t.share_data(&base.t().unwrap()), "share_data");
    assert!(e.to_string().contains("contiguous"));
    // numel mismatch
    assert_err_names(t.share_data(&iota(5)), "share_data");
    // shrink_to: shared storage, and larger than dim 0
    let mut shared = iota(4);
    let other = shared.clone();
    let e = assert_err_names(shared.shrink_to(1), "shrink_to");
    assert!(e.to_string().contains("shared"), "{e}");
    drop(other);
    let e = assert_err_names(shared.shrink_to(5), "shrink_to");
    assert!(e.to_string().contains('5') && e.to_string().contains('4'), "{e}");
    // 0-dim
    let mut s = Tensor::scalar(1, DType::I32).unwrap();
    assert_err_names(s.extend_(1, 10), "extend_");
    assert_err_names(s.shrink_to(0), "shrink_to");
    // overflow
    let mut t = iota(2);
    assert!(matches!(assert_err_names(t.resize_(&[usize::MAX, 2]), "resize_"), Error::Overflow { .. }));
    assert_err_names(t.resize_(&[isize::MAX as usize, 2]), "resize_");
    let mut r = iota(2).view(&[2, 1]).unwrap();
    assert_err_names(r.extend_(usize::MAX, 10), "extend_");
    assert_err_names(r.extend_(isize::MAX as usize, 10), "extend_");
    // errors leave the tensor unchanged
    assert_eq!(t.shape(), &[2]);
    assert_eq!(r.shape(), &[2, 1]);
}

#[test]
#[cfg_attr(miri, ignore = "asks the system allocator for more memory than exists")]
fn reserve_beyond_memory_is_an_error() {
    let mut t = iota(2);
    let r = t.reserve(isize::MAX as usize - 64);
    assert!(matches!(r, Err(Error::OutOfMemory { .. }) | Err(Error::Overflow { .. })), "{r:?}");
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1]);
}

proptest! {
    #![proptest_config(config())]

    /// Random sequences of growth calls keep the data they document keeping.
    #[test]
    fn growth_sequences_keep_data(steps in prop::collection::vec((0u8..4, 0usize..6), 1..12)) {
        let mut t = Tensor::from_vec(vec![0i64, 1, 2, 3, 4, 5], &[3, 2]).unwrap();
        let mut model: Vec<i64> = (0..6).collect();
        for (kind, k) in steps {
            match kind {
                0 => {
                    t.extend_(k, 25).unwrap();
                    model.resize(model.len() + 2 * k, i64::MIN); // unspecified values
                }
                1 => {
                    let outer = k.min(t.shape()[0]);
                    t.shrink_to(outer).unwrap();
                    model.truncate(2 * outer);
                }
                2 => t.reserve(k * 64).unwrap(),
                _ => {
                    // resize to the same number of elements: storage and data kept
                    let n = t.numel();
                    t.resize_(&[n / 2, 2]).unwrap();
                }
            }
            let got = t.to_vec::<i64>().unwrap();
            prop_assert_eq!(got.len(), model.len());
            for (g, m) in got.iter().zip(&model) {
                if *m != i64::MIN {
                    prop_assert_eq!(g, m);
                }
            }
        }
    }
}
