//! A view of a per-channel quantized tensor keeps its quantizer right: the channel axis
//! moves with its dim (transpose, permute, squeeze/unsqueeze, broadcast, reshape), a slice
//! along it slices the scales, and selecting one channel leaves a per-tensor quantizer.
//! (A per-tensor quantizer goes through every view unchanged.)

use super::Quantizer;
use crate::{Error, Result};
use std::sync::Arc;

/// What a view op did to the dims.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ViewChange<'a> {
    /// Dims `d0` and `d1` swapped.
    Transpose(usize, usize),
    /// New dim `i` is old dim `perm[i]`.
    Permute(&'a [usize]),
    /// Along `dim`: `len` elements from `start`, every `step`-th.
    Slice { dim: usize, start: usize, len: usize, step: usize },
    /// `dim` removed at `index`.
    Select { dim: usize, index: usize },
    /// Size-1 `dim` removed.
    Squeeze(usize),
    /// A size-1 dim inserted at `dim`.
    Unsqueeze(usize),
    /// `dim` reversed.
    Flip(usize),
    /// Broadcast from `from` to `to` (leading dims added, size-1 dims expanded).
    Broadcast { from: &'a [usize], to: &'a [usize] },
    /// The same elements in row-major order with a new shape.
    Reshape { from: &'a [usize], to: &'a [usize] },
    /// Arbitrary sizes and strides.
    AsStrided,
}

impl Quantizer {
    /// The quantizer of the view `change` makes of a tensor with this quantizer.
    pub(crate) fn through(&self, op: &'static str, change: ViewChange<'_>) -> Result<Quantizer> {
        let Quantizer::PerChannel { dtype, axis, scales, zero_points } = self else {
            return Ok(self.clone());
        };
        let (dtype, axis) = (*dtype, *axis);
        let moved = |axis: usize| Quantizer::PerChannel {
            dtype,
            axis,
            scales: scales.clone(),
            zero_points: zero_points.clone(),
        };
        // The scales and zero points of the channels `idx` names (`len` of them), in that
        // order. A broadcast asks for as many as the new extent, which the user may make
        // far larger than memory: the lists are reserved fallibly.
        let picked = |axis: usize, len: usize, idx: &mut dyn Iterator<Item = usize>| -> Result<Quantizer> {
            let (mut s, mut z) = (Vec::new(), Vec::new());
            let bytes = len.saturating_mul(std::mem::size_of::<f64>() + std::mem::size_of::<i64>());
            if s.try_reserve_exact(len).is_err() || z.try_reserve_exact(len).is_err() {
                let what = format!("the {len} scales and zero points of a per-channel quantized view");
                return Err(Error::out_of_memory(op, bytes, crate::Device::Cpu, what));
            }
            for i in idx {
                s.push(scales[i]);
                z.push(zero_points[i]);
            }
            Ok(Quantizer::PerChannel { dtype, axis, scales: Arc::from(s), zero_points: Arc::from(z) })
        };
        Ok(match change {
            ViewChange::Transpose(d0, d1) => moved(if axis == d0 {
                d1
            } else if axis == d1 {
                d0
            } else {
                axis
            }),
            ViewChange::Permute(perm) => moved(perm.iter().position(|&p| p == axis).unwrap_or(axis)),
            ViewChange::Slice { dim, start, len, step } if dim == axis => {
                picked(axis, len, &mut (0..len).map(|i| start + i * step))?
            }
            ViewChange::Select { dim, index } if dim == axis => self.channel(index),
            ViewChange::Select { dim, .. } | ViewChange::Squeeze(dim) if dim < axis => moved(axis - 1),
            ViewChange::Squeeze(dim) if dim == axis => self.channel(0),
            ViewChange::Unsqueeze(dim) if dim <= axis => moved(axis + 1),
            ViewChange::Flip(dim) if dim == axis => picked(axis, scales.len(), &mut (0..scales.len()).rev())?,
            ViewChange::Broadcast { from, to } => {
                let new_axis = axis + (to.len() - from.len());
                if from[axis] == to[new_axis] {
                    moved(new_axis)
                } else {
                    picked(new_axis, to[new_axis], &mut (0..to[new_axis]).map(|_| 0))?
                }
            }
            ViewChange::Reshape { from, to } => match reshaped_axis(from, to, axis) {
                Some(a) => moved(a),
                None => {
                    return Err(Error::shape(
                        op,
                        format!(
                            "shape {to:?} splits or merges the channel dim {axis} of a per-channel quantized tensor of shape {from:?}; keep that dim whole (or dequantize() first)"
                        ),
                    ))
                }
            },
            ViewChange::AsStrided => {
                return Err(Error::invalid(
                    op,
                    "a per-channel quantized tensor has no as_strided view (its channel axis would be lost); use int_repr() or dequantize() first",
                ))
            }
            _ => moved(axis),
        })
    }
}

/// Where dim `axis` of `from` is in `to`, if reshaping keeps it whole: the dims before it
/// hold as many elements in both shapes and the dim has the same size.
fn reshaped_axis(from: &[usize], to: &[usize], axis: usize) -> Option<usize> {
    let before: usize = from[..axis].iter().product();
    let mut acc = 1usize;
    for (i, &d) in to.iter().enumerate() {
        if acc == before && d == from[axis] {
            return Some(i);
        }
        acc = acc.checked_mul(d)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    fn pc() -> Quantizer {
        Quantizer::per_channel(DType::QInt8, 1, vec![0.1, 0.2, 0.3], vec![0, 1, 2]).unwrap()
    }

    #[test]
    fn the_axis_follows_its_dim() {
        let q = pc();
        assert_eq!(q.through("t", ViewChange::Transpose(0, 1)).unwrap().axis(), Some(0));
        assert_eq!(q.through("p", ViewChange::Permute(&[1, 2, 0])).unwrap().axis(), Some(0));
        assert_eq!(q.through("p", ViewChange::Permute(&[2, 0, 1])).unwrap().axis(), Some(2));
        assert_eq!(q.through("u", ViewChange::Unsqueeze(0)).unwrap().axis(), Some(2));
        assert_eq!(q.through("u", ViewChange::Unsqueeze(2)).unwrap().axis(), Some(1));
        assert_eq!(q.through("s", ViewChange::Select { dim: 0, index: 1 }).unwrap().axis(), Some(0));
        let b = q.through("b", ViewChange::Broadcast { from: &[2, 3], to: &[4, 2, 3] }).unwrap();
        assert_eq!(b.axis(), Some(2));
        let r = q.through("r", ViewChange::Reshape { from: &[2, 3, 4], to: &[2, 3, 2, 2] }).unwrap();
        assert_eq!(r.axis(), Some(1));
        assert!(q.through("r", ViewChange::Reshape { from: &[2, 3, 4], to: &[6, 4] }).is_err());
    }

    #[test]
    fn slicing_the_axis_slices_the_scales() {
        let q = pc();
        let s = q.through("slice", ViewChange::Slice { dim: 1, start: 0, len: 2, step: 2 }).unwrap();
        assert_eq!((s.scale(0), s.scale(1), s.zero_point(1), s.channels()), (0.1, 0.3, 2, 2));
        let f = q.through("flip", ViewChange::Flip(1)).unwrap();
        assert_eq!((f.scale(0), f.zero_point(0)), (0.3, 2));
        let one = q.through("select", ViewChange::Select { dim: 1, index: 2 }).unwrap();
        assert_eq!(one, Quantizer::per_tensor(DType::QInt8, 0.3, 2).unwrap());
    }
}
