//! Lazy allocation, storage sharing, and soundness of concurrent writes through
//! overlapping views (run under Miri to check for data races and UB).

use std::sync::Arc;
use std::thread;
use tensor_core::{DType, Device, Scalar, Storage, Tensor};

#[test]
fn empty_allocates_at_first_access_only() {
    let t = Tensor::empty(&[4, 8], DType::F32, Device::Cpu).unwrap();
    assert!(!t.storage().is_allocated());
    // Metadata and views do not allocate.
    let v = t.t().unwrap().narrow(0, 1, 3).unwrap().flip(1).unwrap().expand(&[2, 3, 4]).unwrap();
    let _ = (t.shape(), t.numel(), t.is_contiguous(), v.storage_span(), t.contiguous().unwrap());
    let _ = t.view(&[-1]).unwrap().reshape(&[2, 16]).unwrap();
    assert!(!t.storage().is_allocated());
    assert_eq!(t.storage().capacity_bytes(), 4 * 8 * 4);
    // A read allocates (zeros).
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.0; 24]);
    assert!(t.storage().is_allocated());

    let u = Tensor::empty(&[3], DType::Bool, Device::Cpu).unwrap();
    u.select(0, 1).unwrap().fill_(true).unwrap(); // a write allocates too
    assert!(u.storage().is_allocated());
    assert_eq!(u.to_vec::<bool>().unwrap(), vec![false, true, false]);

    // A copy out of a lazy tensor allocates the source (it is read) and the copy.
    let w = Tensor::empty(&[2, 2], DType::I16, Device::Cpu).unwrap();
    let c = w.t().unwrap().contiguous().unwrap();
    assert!(w.storage().is_allocated() && c.storage().is_allocated());
}

#[test]
fn huge_lazy_tensors_cost_nothing_until_touched() {
    // 1 TiB of f64: fine as long as nobody touches it (also under Miri).
    let t = Tensor::empty(&[1 << 20, 1 << 17], DType::F64, Device::Cpu).unwrap();
    let v = t.narrow(0, 5, 2).unwrap().t().unwrap();
    assert_eq!(v.shape(), &[1 << 17, 2]);
    assert!(!t.storage().is_allocated());
    assert_eq!(t.storage().capacity_bytes(), 1 << 40);
}

#[test]
#[cfg_attr(miri, ignore = "asks the system allocator for more memory than exists")]
fn allocation_failure_is_an_error() {
    let t = Tensor::empty(&[1 << 20, 1 << 20, 1 << 20], DType::U8, Device::Cpu).unwrap();
    assert!(matches!(t.fill_(1), Err(tensor_core::Error::OutOfMemory { .. })));
    assert!(t.to_vec::<u8>().is_err());
    assert!(!t.storage().is_allocated());
}

#[test]
fn use_count_tracks_views() {
    let t = Tensor::zeros(&[4], DType::U8, Device::Cpu).unwrap();
    assert!(t.storage().is_unique());
    let v = t.flip(0).unwrap();
    let w = v.clone();
    assert_eq!(t.storage().use_count(), 3);
    drop((v, w));
    assert_eq!(t.storage().use_count(), 1);
    let s = Storage::from_vec(vec![1u16 as i16, 2]);
    let a = Tensor::from_storage(s, &[2]).unwrap();
    assert_eq!(a.to_vec::<i16>().unwrap(), vec![1, 2]);
}

#[test]
fn external_memory_is_released_by_its_deleter() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let buf: Box<[f32]> = vec![1.0f32, 2.0, 3.0].into_boxed_slice();
    let len = buf.len() * 4;
    let ptr = std::ptr::NonNull::new(Box::into_raw(buf) as *mut u8).unwrap();
    let deleter: tensor_core::Deleter = Box::new(|p, bytes| {
        // SAFETY: `p` is the pointer from Box::into_raw of a [f32; 3] above; rebuilt once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.as_ptr() as *mut f32, bytes / 4)) });
        FREED.fetch_add(1, Ordering::SeqCst);
    });
    // SAFETY: the box's memory is valid, aligned for f32, initialized and owned by the storage.
    let s = unsafe { Storage::from_external(ptr, len, DType::F32, Device::Cpu, deleter) };
    let t = Tensor::from_storage(s, &[3]).unwrap();
    t.select(0, 0).unwrap().fill_(9.0).unwrap();
    assert_eq!(t.flip(0).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 2.0, 9.0]);
    let v = t.narrow(0, 1, 1).unwrap();
    drop(t);
    assert_eq!(FREED.load(Ordering::SeqCst), 0);
    drop(v);
    assert_eq!(FREED.load(Ordering::SeqCst), 1);
}

#[test]
fn concurrent_writes_through_overlapping_views() {
    let (threads, rounds, n) = if cfg!(miri) { (3, 3, 6) } else { (8, 200, 64) };
    let base = Tensor::empty(&[n, n], DType::I32, Device::Cpu).unwrap(); // lazily allocated by a racer
    let other = Arc::new(Tensor::zeros(&[n, n], DType::I32, Device::Cpu).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|k| {
            let base = base.clone();
            let other = Arc::clone(&other);
            thread::spawn(move || {
                for r in 0..rounds {
                    let v = (k * 1000 + r) as i32;
                    match (k + r) % 5 {
                        0 => base.fill_(v).unwrap(),
                        1 => base.t().unwrap().narrow(0, 1, n - 2).unwrap().fill_(v).unwrap(),
                        // overlapping source and destination in one storage
                        2 => base.narrow(0, 0, n - 1).unwrap().copy_(&base.narrow(0, 1, n - 1).unwrap()).unwrap(),
                        // two storages in both directions (lock ordering)
                        3 => other.flip(1).unwrap().copy_(&base).unwrap(),
                        _ => base.copy_(&other.t().unwrap()).unwrap(),
                    }
                    let seen = base.select(0, r % n).unwrap().to_vec::<i32>().unwrap();
                    assert_eq!(seen.len(), n);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Every element holds one of the values some thread wrote (or a copy of one).
    let valid = |x: &i32| *x == 0 || (x % 1000) < rounds as i32 && (x / 1000) < threads as i32;
    assert!(base.to_vec::<i32>().unwrap().iter().all(valid));
    assert!(other.to_vec::<i32>().unwrap().iter().all(valid));
}

#[test]
fn concurrent_mixed_dtypes_and_scalars() {
    let (threads, rounds) = if cfg!(miri) { (2, 2) } else { (4, 100) };
    let t = Tensor::zeros(&[5, 3], DType::F16, Device::Cpu).unwrap();
    let handles: Vec<_> = (0..threads)
        .map(|k| {
            let t = t.clone();
            thread::spawn(move || {
                for r in 0..rounds {
                    let col = t.select(1, (k + r) % 3).unwrap();
                    col.fill_(Scalar::Float(k as f64)).unwrap();
                    let f = col.to_dtype(DType::F64).unwrap();
                    t.select(1, (k + r + 1) % 3).unwrap().copy_(&f).unwrap();
                    let _ = format!("{t}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let vals = t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert!(vals.iter().all(|&x| x >= 0.0 && x < threads as f32 && x.fract() == 0.0), "{vals:?}");
}

#[test]
fn lock_sets_merge_repeats_of_any_number_of_storages() {
    use tensor_core::{lock_many, Access, Error};
    let s: Vec<Storage> = (0..6).map(|_| Storage::new_lazy(DType::I32, 4, Device::Cpu).unwrap()).collect();
    // Seven and three entries (past and within the inline size), repeats read and written.
    let many = [
        (&s[0], Access::Read),
        (&s[1], Access::Read),
        (&s[2], Access::Write),
        (&s[0], Access::Write),
        (&s[3], Access::Write),
        (&s[4], Access::Read),
        (&s[1], Access::Read),
    ];
    let few = [(&s[5], Access::Read), (&s[5], Access::Write), (&s[4], Access::Read)];
    for set in [&many[..], &few[..]] {
        let locks = lock_many(set).unwrap();
        assert!(set.iter().all(|(st, _)| !locks.base(st).is_null()));
        // Taken once each: written storages refuse another lock on this thread, read ones
        // allow another read.
        for &(st, _) in set {
            let written = set.iter().any(|(o, a)| o.same(st) && *a == Access::Write);
            assert_eq!(st.read().is_err(), written);
            assert!(matches!(st.write(), Err(Error::Locked { .. })));
        }
    }
    // All released: each can be written now, from another thread too.
    thread::scope(|sc| {
        sc.spawn(|| s.iter().for_each(|st| drop(st.write().unwrap())));
    });
    // A set failing half-way (a storage this thread reads, wanted for writing) records
    // nothing and leaves the guard it did not take alone.
    let guard = s[3].read().unwrap();
    assert!(matches!(lock_many(&many), Err(Error::Locked { .. })));
    assert!(matches!(s[3].write(), Err(Error::Locked { .. })));
    assert!(s[0].write().is_ok());
    drop(guard);
    assert!(s[3].write().is_ok());
}

#[test]
fn a_lock_set_taken_alone_releases_exactly_its_own_records() {
    use tensor_core::{lock_many, Access, Error};
    let s: Vec<Storage> = (0..3).map(|_| Storage::new_lazy(DType::F32, 4, Device::Cpu).unwrap()).collect();
    // Taken with nothing else held; a guard on another storage comes and goes meanwhile.
    let set = lock_many(&[(&s[0], Access::Read), (&s[1], Access::Write)]).unwrap();
    drop(s[2].write().unwrap());
    assert!(matches!(s[1].read(), Err(Error::Locked { .. })));
    drop(set);
    assert!(s.iter().all(|st| st.write().is_ok()), "every record released");
    // A guard on one of its storages taken meanwhile and kept past the set: the set's drop
    // leaves that guard's record, so a write on this thread is still refused (no hang).
    let set = lock_many(&[(&s[0], Access::Read), (&s[1], Access::Read)]).unwrap();
    let guard = s[0].read().unwrap();
    drop(set);
    assert!(matches!(s[0].write(), Err(Error::Locked { .. })));
    assert!(s[1].write().is_ok());
    drop(guard);
    assert!(s[0].write().is_ok());
    // Taken while a guard is held (not alone): the held guard's record stays after it.
    let guard = s[2].read().unwrap();
    let set = lock_many(&[(&s[0], Access::Write), (&s[2], Access::Read)]).unwrap();
    drop(set);
    assert!(matches!(s[2].write(), Err(Error::Locked { .. })));
    assert!(s[0].write().is_ok());
    drop(guard);
    assert!(s[2].write().is_ok());
}
