//! Shared test helpers: proptest configuration and an independent model of strided views.
//!
//! The model never looks at strides: a view is the list of storage offsets of its
//! elements in logical row-major order, and every view op is written as "which element of
//! the input does output index `i` come from". Comparing `to_vec` (and the tensor's own
//! strides/offset) against it checks the stride arithmetic independently.

#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::Config;
use tensor_core::{Element, Error, Result, Tensor};

/// Few cases under Miri (it is ~100x slower), no persistence files there either.
pub fn config() -> Config {
    if cfg!(miri) {
        Config { cases: 4, failure_persistence: None, ..Config::default() }
    } else {
        Config { cases: 256, ..Config::default() }
    }
}

/// Asserts `r` is an error whose message names `op`.
#[track_caller]
pub fn assert_err_names<T: std::fmt::Debug>(r: Result<T>, op: &str) -> Error {
    match r {
        Ok(v) => panic!("expected an error from {op}, got Ok({v:?})"),
        Err(e) => {
            assert!(e.to_string().contains(op), "message of {op} error does not name it: {e}");
            e
        }
    }
}

/// Row-major multi-index of linear index `lin` in `shape`.
pub fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = lin % shape[d];
        lin /= shape[d];
    }
    idx
}

/// Row-major linear index of `idx` in `shape`.
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// A view as the storage contents plus the storage offset of each logical element.
#[derive(Clone, Debug)]
pub struct Model<T> {
    /// The whole storage, as the model believes it is.
    pub data: Vec<T>,
    pub shape: Vec<usize>,
    /// Storage offset of each element, row-major.
    pub offsets: Vec<usize>,
}

impl<T: Element> Model<T> {
    /// A contiguous view of `len` elements of `data` starting at `start` with `shape`.
    pub fn new(data: Vec<T>, shape: &[usize], start: usize) -> Self {
        let n: usize = shape.iter().product();
        Model { data, shape: shape.to_vec(), offsets: (start..start + n).collect() }
    }

    pub fn numel(&self) -> usize {
        self.offsets.len()
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub fn values(&self) -> Vec<T> {
        self.offsets.iter().map(|&o| self.data[o]).collect()
    }

    /// The model of a new view: output index `i` reads input index `src(i)`.
    pub fn remap(&self, shape: Vec<usize>, src: impl Fn(&[usize]) -> Vec<usize>) -> Self {
        let n: usize = shape.iter().product();
        let offsets = (0..n)
            .map(|lin| {
                let i = unravel(lin, &shape);
                self.offsets[ravel(&src(&i), &self.shape)]
            })
            .collect();
        Model { data: self.data.clone(), shape, offsets }
    }

    /// The same values in a fresh storage (what a copying op produces).
    pub fn materialize(&self) -> Self {
        Model::new(self.values(), &self.shape.clone(), 0)
    }

    /// True when two logical indices share a storage element.
    pub fn has_overlap(&self) -> bool {
        let mut o = self.offsets.clone();
        o.sort_unstable();
        o.windows(2).any(|w| w[0] == w[1])
    }

    /// True when the offsets are `o, o+1, ...` (row-major contiguous).
    pub fn is_dense(&self) -> bool {
        self.offsets.windows(2).all(|w| w[1] == w[0] + 1)
    }

    /// Checks the tensor against the model: shape, values, and the metadata the model
    /// implies (strides of non-trivial dims, offset, contiguity, span, overlap).
    #[track_caller]
    pub fn check(&self, t: &Tensor) {
        assert_eq!(t.shape(), &self.shape[..], "shape");
        assert_eq!(t.numel(), self.numel());
        assert_eq!(
            t.to_vec::<T>().unwrap(),
            self.values(),
            "values of shape {:?} strides {:?}",
            t.shape(),
            t.strides()
        );
        if self.numel() == 0 {
            assert!(t.is_contiguous());
            assert_eq!(t.storage_span(), None);
            return;
        }
        assert_eq!(t.storage_offset(), self.offsets[0], "storage offset");
        for d in 0..self.ndim() {
            if self.shape[d] > 1 {
                let mut e = vec![0; self.ndim()];
                e[d] = 1;
                let step = self.offsets[ravel(&e, &self.shape)] as isize - self.offsets[0] as isize;
                assert_eq!(t.strides()[d], step, "stride of dim {d}");
            }
        }
        assert_eq!(t.is_contiguous(), self.is_dense(), "is_contiguous of strides {:?}", t.strides());
        let lo = *self.offsets.iter().min().unwrap();
        let hi = *self.offsets.iter().max().unwrap();
        assert_eq!(t.storage_span(), Some((lo, hi)));
        assert_eq!(t.has_internal_overlap(), self.has_overlap(), "overlap of strides {:?}", t.strides());
    }
}

/// Resolves a view/reshape spec the way PyTorch does, independently of the library.
pub fn infer(spec: &[isize], numel: usize) -> Option<Vec<usize>> {
    let holes = spec.iter().filter(|&&d| d == -1).count();
    if holes > 1 || spec.iter().any(|&d| d < -1) {
        return None;
    }
    let known: usize = spec.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
    let mut out: Vec<usize> = spec.iter().map(|&d| d.max(0) as usize).collect();
    if holes == 1 {
        if numel.checked_rem(known) != Some(0) {
            return None;
        }
        let i = spec.iter().position(|&d| d == -1).unwrap();
        out[i] = numel / known;
        Some(out)
    } else if known == numel {
        Some(out)
    } else {
        None
    }
}

/// One random view op; parameters are raw and interpreted against the current shape
/// (sometimes out of range on purpose, to exercise the error paths).
#[derive(Clone, Debug)]
pub enum Op {
    View(u8, usize, usize),
    Reshape(u8, usize, usize),
    Transpose(usize, usize),
    T,
    Permute(Vec<u8>, bool),
    Narrow(usize, usize, usize),
    Select(usize, usize),
    Slice(usize, usize, usize, usize),
    Expand(Vec<usize>, Vec<usize>, bool),
    BroadcastTo(Vec<usize>, Vec<usize>, bool),
    Squeeze(usize),
    Unsqueeze(usize),
    Flatten,
    Flip(usize),
    AsStrided(Vec<usize>, Vec<isize>, usize),
    Contiguous,
}

pub fn op_strategy() -> impl Strategy<Value = Op> {
    let dim = 0usize..5;
    prop_oneof![
        (0u8..6, 0usize..6, 0usize..6).prop_map(|(k, a, b)| Op::View(k, a, b)),
        (0u8..6, 0usize..6, 0usize..6).prop_map(|(k, a, b)| Op::Reshape(k, a, b)),
        (dim.clone(), dim.clone()).prop_map(|(a, b)| Op::Transpose(a, b)),
        Just(Op::T),
        (prop::collection::vec(any::<u8>(), 0..5), prop::bool::weighted(0.15)).prop_map(|(k, c)| Op::Permute(k, c)),
        (dim.clone(), 0usize..5, 0usize..5).prop_map(|(d, s, l)| Op::Narrow(d, s, l)),
        (dim.clone(), 0usize..5).prop_map(|(d, i)| Op::Select(d, i)),
        (dim.clone(), 0usize..5, 0usize..7, 0usize..4).prop_map(|(d, s, e, st)| Op::Slice(d, s, e, st)),
        (prop::collection::vec(0usize..4, 0..3), prop::collection::vec(0usize..40, 5), prop::bool::weighted(0.1))
            .prop_map(|(l, c, drop)| Op::Expand(l, c, drop)),
        (prop::collection::vec(0usize..4, 0..3), prop::collection::vec(0usize..40, 5), prop::bool::weighted(0.1))
            .prop_map(|(l, c, drop)| Op::BroadcastTo(l, c, drop)),
        dim.clone().prop_map(Op::Squeeze),
        dim.clone().prop_map(Op::Unsqueeze),
        Just(Op::Flatten),
        dim.prop_map(Op::Flip),
        (0usize..4)
            .prop_flat_map(|n| (prop::collection::vec(0usize..4, n), prop::collection::vec(-3isize..=3, n), 0usize..40))
            .prop_map(|(sh, st, o)| Op::AsStrided(sh, st, o)),
        Just(Op::Contiguous),
    ]
}

/// A view/reshape spec derived from the current shape.
fn spec_for(kind: u8, a: usize, b: usize, shape: &[usize]) -> Vec<isize> {
    let cur: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    let n = shape.len();
    match kind {
        0 => vec![-1],
        1 if n >= 2 => {
            // merge dims a, a+1
            let i = a % (n - 1);
            let mut s = cur.clone();
            let merged = s[i] * s[i + 1];
            s.splice(i..i + 2, [merged]);
            s
        }
        2 if n >= 1 => {
            // split dim a into (k, size / k)
            let i = a % n;
            let size = cur[i];
            let k = (2..=size).find(|k| size % k == 0).unwrap_or(1);
            let mut s = cur.clone();
            let parts = if size == 0 { [(b % 3) as isize, 0] } else { [k, size / k] };
            s.splice(i..i + 1, parts);
            s
        }
        3 => {
            let mut s = cur.clone();
            s.insert(a % (n + 1), 1);
            s
        }
        4 => (0..1 + b % 3).map(|j| ((a + j * b) % 5) as isize).collect(),
        _ if n >= 1 => {
            let mut s = cur.clone();
            s[a % n] = -1;
            if matches!(b % 4, 0) {
                s.push(-1); // two holes: invalid
            }
            s
        }
        _ => vec![],
    }
}

fn expand_target(lead: &[usize], choice: &[usize], drop: bool, shape: &[usize]) -> Vec<usize> {
    let mut t: Vec<usize> = lead.to_vec();
    for (i, &d) in shape.iter().enumerate() {
        let c = choice[i % choice.len()];
        t.push(if d == 1 {
            c % 4
        } else if matches!(c % 9, 0) {
            c % 5
        } else {
            d
        });
    }
    if drop && !t.is_empty() {
        t.remove(0);
    }
    t
}

/// What the model says an expand to `target` gives (`None`: must be an error).
fn model_expand<T: Element>(m: &Model<T>, target: &[usize]) -> Option<Model<T>> {
    if target.len() < m.ndim() {
        return None;
    }
    let lead = target.len() - m.ndim();
    for (i, &d) in m.shape.iter().enumerate() {
        if d != target[lead + i] && d != 1 {
            return None;
        }
    }
    let shape = m.shape.clone();
    Some(
        m.remap(target.to_vec(), |i| i[lead..].iter().zip(&shape).map(|(&x, &d)| if d == 1 { 0 } else { x }).collect()),
    )
}

/// Applies `op` to the tensor and to the model and checks they agree: both succeed (and
/// the result matches the model), or both fail (and the message names the op). Returns
/// the new pair, or `None` when the op failed.
pub fn apply<T: Element>(t: &Tensor, m: &Model<T>, op: &Op) -> Option<(Tensor, Model<T>)> {
    let nd = m.ndim();
    let (name, got, want): (&str, Result<Tensor>, Option<Model<T>>) = match op {
        Op::View(k, a, b) | Op::Reshape(k, a, b) => {
            let spec = spec_for(*k, *a, *b, &m.shape);
            let want = infer(&spec, m.numel()).map(|s| Model { shape: s, ..m.clone() });
            if let Op::View(..) = op {
                let got = t.view(&spec);
                match (&got, &want) {
                    (Err(e), Some(w)) => {
                        // Legitimately impossible only for a non-dense, non-empty view.
                        assert!(!m.is_dense() && m.numel() > 0, "view {spec:?} of a dense tensor failed: {e}");
                        assert!(e.to_string().contains("view"), "{e}");
                        let r = t.reshape(&spec).expect("reshape must succeed where view cannot");
                        w.materialize().check(&r);
                        return None;
                    }
                    (Ok(v), _) => assert!(v.shares_storage(t), "view must not copy"),
                    _ => {}
                }
                ("view", got, want)
            } else {
                let got = t.reshape(&spec);
                if let (Ok(r), Some(w)) = (&got, &want)
                    && !r.shares_storage(t)
                {
                    assert!(r.is_contiguous());
                    let w = w.materialize();
                    w.check(r);
                    return Some((r.clone(), w));
                }
                ("reshape", got, want)
            }
        }
        &Op::Transpose(a, b) => {
            let want = (a < nd && b < nd).then(|| {
                let mut s = m.shape.clone();
                s.swap(a, b);
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j.swap(a, b);
                    j
                })
            });
            ("transpose", t.transpose(a, b), want)
        }
        Op::T => {
            let want = match nd {
                0 | 1 => Some(m.clone()),
                2 => Some(m.remap(vec![m.shape[1], m.shape[0]], |i| vec![i[1], i[0]])),
                _ => None,
            };
            ("t", t.t(), want)
        }
        Op::Permute(keys, corrupt) => {
            let mut perm: Vec<usize> = (0..keys.len()).collect();
            perm.sort_by_key(|&i| (keys[i], i));
            if *corrupt && perm.len() >= 2 {
                perm[1] = perm[0];
            }
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            let valid = perm.len() == nd && sorted == (0..nd).collect::<Vec<_>>();
            let want = valid.then(|| {
                let shape = perm.iter().map(|&p| m.shape[p]).collect();
                m.remap(shape, |i| {
                    let mut j = vec![0; nd];
                    for (k, &p) in perm.iter().enumerate() {
                        j[p] = i[k];
                    }
                    j
                })
            });
            ("permute", t.permute(&perm), want)
        }
        &Op::Narrow(d, start, len) => {
            let want = (d < nd && start + len <= m.shape[d]).then(|| {
                let mut s = m.shape.clone();
                s[d] = len;
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j[d] += start;
                    j
                })
            });
            ("narrow", t.narrow(d, start, len), want)
        }
        &Op::Select(d, idx) => {
            let want = (d < nd && idx < m.shape[d]).then(|| {
                let mut s = m.shape.clone();
                s.remove(d);
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j.insert(d, idx);
                    j
                })
            });
            ("select", t.select(d, idx), want)
        }
        &Op::Slice(d, start, end, step) => {
            let want = (d < nd && step >= 1).then(|| {
                let end = end.min(m.shape[d]);
                let start = start.min(end);
                let mut s = m.shape.clone();
                s[d] = (start..end).step_by(step).count();
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j[d] = start + i[d] * step;
                    j
                })
            });
            ("slice", t.slice(d, start, end, step), want)
        }
        Op::Expand(lead, choice, drop) => {
            let target = expand_target(lead, choice, *drop, &m.shape);
            ("expand", t.expand(&target), model_expand(m, &target))
        }
        Op::BroadcastTo(lead, choice, drop) => {
            let target = expand_target(lead, choice, *drop, &m.shape);
            ("broadcast_to", t.broadcast_to(&target), model_expand(m, &target))
        }
        &Op::Squeeze(d) => {
            let want = (d < nd).then(|| {
                if m.shape[d] != 1 {
                    return m.clone();
                }
                let mut s = m.shape.clone();
                s.remove(d);
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j.insert(d, 0);
                    j
                })
            });
            ("squeeze", t.squeeze(d), want)
        }
        &Op::Unsqueeze(d) => {
            let want = (d <= nd).then(|| {
                let mut s = m.shape.clone();
                s.insert(d, 1);
                m.remap(s, |i| {
                    let mut j = i.to_vec();
                    j.remove(d);
                    j
                })
            });
            ("unsqueeze", t.unsqueeze(d), want)
        }
        Op::Flatten => {
            let got = t.flatten();
            let w = Model { shape: vec![m.numel()], ..m.clone() };
            if let Ok(r) = &got
                && !r.shares_storage(t)
            {
                assert!(!m.is_dense(), "flatten of a dense tensor copied");
                let w = w.materialize();
                w.check(r);
                return Some((r.clone(), w));
            }
            ("flatten", got, Some(w))
        }
        &Op::Flip(d) => {
            let want = (d < nd).then(|| {
                let size = m.shape[d];
                m.remap(m.shape.clone(), |i| {
                    let mut j = i.to_vec();
                    j[d] = size - 1 - i[d];
                    j
                })
            });
            ("flip", t.flip(d), want)
        }
        Op::AsStrided(shape, strides, offset) => {
            let cap = t.storage().capacity_elems();
            let n: usize = shape.iter().product();
            let offs: Vec<isize> = (0..n)
                .map(|lin| {
                    let i = unravel(lin, shape);
                    *offset as isize + i.iter().zip(strides).map(|(&x, &s)| x as isize * s).sum::<isize>()
                })
                .collect();
            let valid = if n == 0 { *offset <= cap } else { offs.iter().all(|&o| o >= 0 && (o as usize) < cap) };
            let want = valid.then(|| Model {
                data: m.data.clone(),
                shape: shape.clone(),
                offsets: offs.iter().map(|&o| o as usize).collect(),
            });
            ("as_strided", t.as_strided(shape, strides, *offset), want)
        }
        Op::Contiguous => {
            let c = t.contiguous().unwrap();
            if m.is_dense() || m.numel() == 0 {
                assert!(c.shares_storage(t), "contiguous() of a contiguous tensor must not copy");
                m.check(&c);
                return Some((c, m.clone()));
            }
            assert!(!c.shares_storage(t) && c.is_contiguous());
            let w = m.materialize();
            w.check(&c);
            return Some((c, w));
        }
    };
    match (got, want) {
        (Ok(r), Some(w)) => {
            assert!(r.shares_storage(t), "{name} must be a view");
            w.check(&r);
            Some((r, w))
        }
        (Err(e), None) => {
            assert!(e.to_string().contains(name), "error of {name} does not name it: {e}");
            None
        }
        (Ok(r), None) => panic!("{name} ({op:?}) on shape {:?} should fail, got shape {:?}", m.shape, r.shape()),
        (Err(e), Some(w)) => panic!("{name} ({op:?}) on shape {:?} should give {:?}, got {e}", m.shape, w.shape),
    }
}

/// Random shapes of 0..=4 dims with sizes 0..=4 (0- and 1-sized dims included).
pub fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1 => Just(0usize), 2 => Just(1usize), 4 => 2usize..5], 0..=4)
}
