//! The fuzzers' random numbers (`api_fuzz`, `value_fuzz`): the hash of a counter, so a seed
//! gives the same calls with one toolchain, and the edge values both draw from.

// Each fuzzer uses part of it.
#![allow(dead_code)]

use tensor_ops::prelude::*;

/// The hash of a counter (`DefaultHasher::new()` has fixed keys): the same calls for the
/// same seed with one toolchain.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        use std::hash::{Hash, Hasher};
        self.0 = self.0.wrapping_add(1);
        let mut h = std::hash::DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    /// A dim, extent or index: mostly small, sometimes an edge value.
    pub fn index(&mut self) -> usize {
        if self.below(4) > 0 {
            self.below(6)
        } else {
            self.pick(&[usize::MAX, usize::MAX - 1, -1i64 as usize, -2i64 as usize, 1 << 40, 1 << 62, 7, 64])
        }
    }
    pub fn isize(&mut self) -> isize {
        if self.below(4) > 0 {
            self.below(7) as isize - 1
        } else {
            self.pick(&[isize::MAX, isize::MIN, -2, -3, 1 << 40, -(1 << 40), 0])
        }
    }
    pub fn f64(&mut self) -> f64 {
        self.pick(&[
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-300,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            3.5,
            -1e10,
            448.0,
            65504.0,
        ])
    }
    pub fn i64(&mut self) -> i64 {
        self.pick(&[0, 1, -1, 127, 128, 255, 256, -128, -129, i64::MAX, i64::MIN, 1 << 40, 3])
    }
    pub fn dtype(&mut self) -> DType {
        let all: Vec<DType> = DType::ALL.iter().chain(DType::QUANTIZED.iter()).copied().collect();
        self.pick(&all)
    }
    pub fn plain_dtype(&mut self) -> DType {
        self.pick(&DType::ALL)
    }
    pub fn dims(&mut self) -> Vec<usize> {
        (0..self.below(4)).map(|_| self.index()).collect()
    }
    pub fn shape(&mut self, hostile: bool) -> Vec<usize> {
        (0..self.below(5)).map(|_| if hostile { self.index() } else { self.below(6) }).collect()
    }
    pub fn scalar(&mut self) -> Scalar {
        match self.below(3) {
            0 => Scalar::from(self.f64()),
            1 => Scalar::from(self.i64()),
            _ => Scalar::from(self.coin()),
        }
    }
}
