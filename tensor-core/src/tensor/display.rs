//! PyTorch-like `Display`/`Debug`.
//!
//! `{}` and `{:?}` print one line, `{:#}` and `{:#?}` print PyTorch's multi-line layout:
//!
//! ```text
//! tensor([[0., 1.], [2., 3.]], dtype=f32)          // {}
//! tensor([[0., 1.],
//!         [2., 3.]], dtype=f32)                     // {:#}
//! tensor([1, 2, 3], dtype=i64)
//! tensor([true, false], dtype=bool)                 // Rust spelling of booleans
//! tensor(3., dtype=f32)                             // 0-dim
//! tensor([], size=[2, 0], dtype=f32)                // no elements
//! tensor([0., 1., 2., ..., 1997., 1998., 1999.], dtype=f32)
//! tensor([1., 2.], device=cuda:0, dtype=f32)
//! ```
//!
//! Rules (PyTorch's): tensors of more than 1000 elements are elided
//! with `...`, keeping 3 entries at each edge of every dim longer than twice
//! that. Elements are right-aligned to a common width. Floats whose values are all
//! integers print as `1.`; otherwise with 4 decimals, or in scientific notation
//! (`1.0000e-05`) when the largest magnitude exceeds 1e8, the smallest nonzero one is
//! below 1e-4, or their ratio exceeds 1000. The dtype is always shown; the device when
//! it is not the CPU. Values are read through [`Tensor::to_vec`] (any strides, any
//! device); if reading fails the values are replaced by a `<...>` placeholder naming the
//! error, never a panic.

use super::Tensor;
use crate::{Element, Result};
use std::fmt;

/// Tensors with more elements than this are printed elided.
const SUMMARIZE_THRESHOLD: usize = 1000;
/// Entries kept at each edge of an elided dim.
const EDGE_ITEMS: usize = 3;

/// One value, widened for printing.
#[derive(Clone, Copy)]
enum Num {
    B(bool),
    I(i64),
    F(f64),
}

fn widen<T: Element>(v: T) -> Num {
    match v.to_scalar() {
        crate::Scalar::Bool(b) => Num::B(b),
        crate::Scalar::Int(i) => Num::I(i),
        crate::Scalar::Float(f) => Num::F(f),
    }
}

/// Reads `t` (any dtype) as widened values in row-major order.
fn read_all(t: &Tensor) -> Result<Vec<Num>> {
    crate::with_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(widen).collect()))
}

/// Indices shown along a dim of `size` (`None` marks the `...`).
fn shown(size: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && size > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS).map(Some).chain([None]).chain((size - EDGE_ITEMS..size).map(Some)).collect()
    } else {
        (0..size).map(Some).collect()
    }
}

/// Appends the shown values of `t` in row-major order of the shown indices.
fn collect(t: &Tensor, summarize: bool, out: &mut Vec<Num>) -> Result<()> {
    match t.ndim() {
        0 => out.extend(read_all(t)?),
        1 if !summarize || t.shape()[0] <= 2 * EDGE_ITEMS => out.extend(read_all(t)?),
        1 => {
            let n = t.shape()[0];
            out.extend(read_all(&t.narrow(0, 0, EDGE_ITEMS)?)?);
            out.extend(read_all(&t.narrow(0, n - EDGE_ITEMS, EDGE_ITEMS)?)?);
        }
        _ => {
            for i in shown(t.shape()[0], summarize).into_iter().flatten() {
                collect(&t.select(0, i)?, summarize, out)?;
            }
        }
    }
    Ok(())
}

/// Formats a float in Python's `{:.4e}` style (`1.2346e-05`).
fn sci(x: f64) -> String {
    let s = format!("{x:.4e}");
    match s.split_once('e') {
        Some((mant, exp)) => {
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mant}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn non_finite(x: f64) -> Option<String> {
    if x.is_nan() {
        Some("nan".into())
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        None
    }
}

/// Strings for every value, using one float mode chosen from all of them (as PyTorch).
fn render(values: &[Num]) -> Vec<String> {
    let finite: Vec<f64> = values
        .iter()
        .filter_map(|v| if let Num::F(x) = v { Some(*x) } else { None })
        .filter(|x| x.is_finite())
        .collect();
    let int_mode = finite.iter().all(|x| x.fract() == 0.0);
    let nonzero: Vec<f64> = finite.iter().map(|x| x.abs()).filter(|&x| x != 0.0).collect();
    let max = nonzero.iter().copied().fold(0.0f64, f64::max);
    let min = nonzero.iter().copied().fold(f64::INFINITY, f64::min);
    let sci_mode =
        !nonzero.is_empty() && if int_mode { max > 1e8 } else { max / min > 1000.0 || max > 1e8 || min < 1e-4 };
    values
        .iter()
        .map(|v| match *v {
            Num::B(b) => b.to_string(),
            Num::I(i) => i.to_string(),
            Num::F(x) => non_finite(x).unwrap_or_else(|| {
                if sci_mode {
                    sci(x)
                } else if int_mode {
                    format!("{x:.0}.")
                } else {
                    format!("{x:.4}")
                }
            }),
        })
        .collect()
}

struct Layout<'a> {
    dims: Vec<Vec<Option<usize>>>,
    cells: std::slice::Iter<'a, String>,
    width: usize,
    pretty: bool,
    indent: usize,
}

impl Layout<'_> {
    fn write(&mut self, f: &mut fmt::Formatter<'_>, level: usize) -> fmt::Result {
        let ndim = self.dims.len();
        if level == ndim {
            let cell = self.cells.next().map_or("?", |s| s.as_str());
            return write!(f, "{cell:>w$}", w = self.width);
        }
        f.write_str("[")?;
        let entries = self.dims[level].clone();
        for (k, entry) in entries.iter().enumerate() {
            if k > 0 {
                f.write_str(",")?;
                if self.pretty && level + 1 < ndim {
                    for _ in 0..ndim - level - 1 {
                        f.write_str("\n")?;
                    }
                    write!(f, "{:w$}", "", w = self.indent + level + 1)?;
                } else {
                    f.write_str(" ")?;
                }
            }
            match entry {
                Some(_) => self.write(f, level + 1)?,
                None => f.write_str("...")?,
            }
        }
        f.write_str("]")
    }
}

impl Tensor {
    fn fmt_values(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numel = self.numel();
        if numel == 0 {
            return if self.ndim() == 1 { f.write_str("[]") } else { write!(f, "[], size={:?}", self.shape()) };
        }
        let summarize = numel > SUMMARIZE_THRESHOLD;
        let mut values = Vec::new();
        let read = if summarize { collect(self, true, &mut values) } else { read_all(self).map(|v| values = v) };
        if let Err(e) = read {
            return write!(f, "<values unreadable: {e}>, size={:?}", self.shape());
        }
        let cells = render(&values);
        let width = cells.iter().map(|s| s.chars().count()).max().unwrap_or(0);
        let dims = self.shape().iter().map(|&d| shown(d, summarize)).collect();
        let mut layout = Layout { dims, cells: cells.iter(), width, pretty: f.alternate(), indent: "tensor(".len() };
        layout.write(f, 0)
    }

    fn fmt_tensor(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parts) = &self.sparse {
            return self.fmt_sparse(parts, f);
        }
        f.write_str("tensor(")?;
        if let Some(q) = self.quantizer() {
            // The values it stands for, then its quantizer (as PyTorch prints one).
            match self.dequantize() {
                Ok(v) => v.fmt_values(f)?,
                Err(e) => write!(f, "<values unreadable: {e}>")?,
            }
            return write!(f, ", dtype={}, quantizer={q})", self.dtype());
        }
        self.fmt_values(f)?;
        if !self.device().is_cpu() {
            write!(f, ", device={}", self.device())?;
        }
        write!(f, ", dtype={})", self.dtype())
    }
}

/// PyTorch-style printing (see the module docs); `{:#}` for the multi-line layout.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Tensor;
/// let t = Tensor::from_vec(vec![0f32, 1., 2., 3.], &[2, 2]).unwrap();
/// assert_eq!(t.to_string(), "tensor([[0., 1.], [2., 3.]], dtype=f32)");
/// assert_eq!(format!("{t:#}"), "tensor([[0., 1.],\n        [2., 3.]], dtype=f32)");
/// let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
/// assert_eq!(b.to_string(), "tensor([ true, false], dtype=bool)");
/// ```
impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tensor(f)
    }
}

/// The same text as `Display` (`{:#?}` gives the multi-line layout); use
/// [`Tensor::shape`], [`Tensor::strides`] and [`Tensor::storage_offset`] for the layout.
impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tensor(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device};

    #[test]
    fn scientific_matches_python() {
        assert_eq!(sci(1.23456e-5), "1.2346e-05");
        assert_eq!(sci(1e8), "1.0000e+08");
        assert_eq!(sci(-2.5e123), "-2.5000e+123");
    }

    #[test]
    fn float_modes() {
        let t = Tensor::from_vec(vec![0.5f64, 1.25], &[2]).unwrap();
        assert_eq!(t.to_string(), "tensor([0.5000, 1.2500], dtype=f64)");
        let t = Tensor::from_vec(vec![1e-5f32, 1.0], &[2]).unwrap();
        assert_eq!(t.to_string(), "tensor([1.0000e-05, 1.0000e+00], dtype=f32)");
        let t = Tensor::from_vec(vec![f32::NAN, -1.0, f32::INFINITY], &[3]).unwrap();
        assert_eq!(t.to_string(), "tensor([nan, -1., inf], dtype=f32)");
        let t = Tensor::from_vec(vec![half::f16::from_f32(2.0)], &[]).unwrap();
        assert_eq!(t.to_string(), "tensor(2., dtype=f16)");
    }

    #[test]
    fn ints_pad_to_common_width() {
        let t = Tensor::from_vec(vec![-1i64, 20, 3], &[3]).unwrap();
        assert_eq!(t.to_string(), "tensor([-1, 20,  3], dtype=i64)");
        assert_eq!(format!("{t:?}"), t.to_string());
    }

    #[test]
    fn empty_and_scalar() {
        let e = Tensor::empty(&[0], DType::I32, Device::Cpu).unwrap();
        assert_eq!(e.to_string(), "tensor([], dtype=i32)");
        let e = Tensor::empty(&[2, 0], DType::F32, Device::Cpu).unwrap();
        assert_eq!(e.to_string(), "tensor([], size=[2, 0], dtype=f32)");
        let s = Tensor::scalar(3, DType::F32).unwrap();
        assert_eq!(s.to_string(), "tensor(3., dtype=f32)");
    }

    #[test]
    fn pretty_three_dims() {
        let t = Tensor::arange(0, 8, 1, DType::I8, Device::Cpu).unwrap().view(&[2, 2, 2]).unwrap();
        assert_eq!(
            format!("{t:#}"),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], dtype=i8)"
        );
    }

    #[test]
    fn elides_big_tensors() {
        let t = Tensor::arange(0, 2000, 1, DType::F32, Device::Cpu).unwrap();
        assert_eq!(t.to_string(), "tensor([   0.,    1.,    2., ..., 1997., 1998., 1999.], dtype=f32)");
        let m = Tensor::arange(0, 1010, 1, DType::I32, Device::Cpu).unwrap().view(&[101, 10]).unwrap();
        let s = m.t().unwrap().to_string();
        assert!(s.starts_with("tensor([[   0,   10,   20, ...,  980,  990, 1000], [   1,"), "{s}");
        assert!(s.contains("], ..., ["), "{s}");
        assert!(s.ends_with("999, 1009]], dtype=i32)"), "{s}");
    }

    #[test]
    fn small_tensor_not_elided() {
        let t = Tensor::arange(0, 10, 1, DType::I64, Device::Cpu).unwrap();
        assert_eq!(t.to_string(), "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=i64)");
    }

    #[test]
    fn unreadable_values_print_a_placeholder() {
        // No CUDA runtime in tensor-core alone: reading fails, printing must not.
        let t = Tensor::empty(&[2], DType::F32, Device::Cuda(0)).unwrap();
        let s = t.to_string();
        assert!(s.starts_with("tensor(<values unreadable: "), "{s}");
        assert!(s.ends_with("size=[2], device=cuda:0, dtype=f32)"), "{s}");
    }
}
