//! Every built-in reduction of random views, dumped as JSON lines for numpy to check
//! (`tests/numpy_oracle.py`, run by `.ci/run`): every dtype; contiguous, transposed,
//! stepped, expanded and flipped inputs; NaN and ±∞ in the float ones; every dims set,
//! keepdim, correction, the `_all` forms, empty extents, empty outputs and the contract's
//! error cases (an error is written as such, and numpy says whether one was due). Each
//! result is also computed by the `_out` form into a poisoned tensor, which must hold the
//! same values.
//!
//! ```sh
//! cargo run -p tensor-tests --example numpy_oracle -- /tmp/oracle.jsonl
//! python3 tests/numpy_oracle.py /tmp/oracle.jsonl
//! ```
//! `--big` takes shapes that reach the parallel splits and the column engine's leaves
//! ([300, 517], [3, 70001], [70001, 3], [2, 257, 300]: several GB of JSON, use `--release`).

use rayon::prelude::*;
use std::fmt::Write as _;
use tensor_ops::prelude::*;

/// xorshift64: the same inputs on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A number as JSON as Python's `json` reads it (NaN and ±Infinity included).
fn json_number(x: f64) -> String {
    match x {
        _ if x.is_nan() => "NaN".into(),
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        _ => format!("{x:e}"),
    }
}

/// A tensor's values in logical order, as a JSON array.
fn json_values(t: &Tensor) -> Result<String> {
    let v = t.contiguous()?.to_dtype(DType::F64)?.to_vec::<f64>()?;
    Ok(format!("[{}]", v.iter().map(|x| json_number(*x)).collect::<Vec<_>>().join(",")))
}

/// `n` values that `dt` holds exactly: small integers, 0/1 for bool, multiples of 1/64 in
/// [-15.6, 15.6] for floats (with `special`, 3% NaN, 2% +∞, 2% −∞).
fn values(rng: &mut Rng, dt: DType, n: usize, special: bool) -> Vec<f64> {
    (0..n)
        .map(|_| match dt {
            DType::Bool => (rng.below(3) == 0) as u8 as f64,
            DType::U8 => rng.below(20) as f64,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => rng.below(21) as f64 - 10.0,
            _ => match rng.below(100) {
                r if special && r < 3 => f64::NAN,
                r if special && r < 5 => f64::INFINITY,
                r if special && r < 7 => f64::NEG_INFINITY,
                _ => (rng.below(2000) as f64 - 1000.0) / 64.0,
            },
        })
        .collect()
}

/// A `shape` view of `dt` in one of the layouts: "contiguous", "transposed" (every dim
/// reversed), "stepped" (every other element of the last dim), "expanded" (dim 0 has
/// stride 0) or "flipped" (first and last dims reversed).
fn input(rng: &mut Rng, dt: DType, shape: &[usize], layout: &str, special: bool) -> Result<Tensor> {
    let last = shape.len() - 1;
    let mut base_shape = shape.to_vec();
    match layout {
        "transposed" => base_shape.reverse(),
        "stepped" => base_shape[last] *= 2,
        "expanded" => base_shape[0] = 1,
        _ => {}
    }
    let n = base_shape.iter().product();
    let base = Tensor::from_vec(values(rng, dt, n, special), &base_shape)?.to_dtype(dt)?;
    match layout {
        "transposed" => base.permute(&(0..shape.len()).rev().collect::<Vec<_>>()),
        "stepped" => base.slice(last, 0, base_shape[last], 2),
        "expanded" => base.expand(shape),
        "flipped" => base.flip(0)?.flip(last),
        _ => Ok(base),
    }
}

/// One reduction call: what it was, and how to run it new and into a given `out`.
struct Call<'a> {
    op: &'a str,
    dims: &'a [usize],
    keepdim: bool,
    correction: i64,
}

/// Runs `new`, then `into` on a poisoned tensor of the result's shape and dtype, and writes
/// the record: the result (or the error) and whether the `_out` form wrote the same values.
fn record(
    out: &mut String,
    xid: usize,
    x: &Tensor,
    c: Call,
    new: impl Fn() -> Result<Tensor>,
    into: impl Fn(&Tensor) -> Result<()>,
) -> Result<()> {
    let dims: Vec<String> = c.dims.iter().map(|d| d.to_string()).collect();
    let _ = write!(
        out,
        "{{\"dtype\":\"{:?}\",\"shape\":{:?},\"xid\":{xid},\"op\":\"{}\",\"dims\":[{}],\"keepdim\":{},\"corr\":{},",
        x.dtype(),
        x.shape(),
        c.op,
        dims.join(","),
        c.keepdim,
        c.correction
    );
    match new() {
        Ok(t) => {
            let poisoned = Tensor::full(t.shape(), 77, t.dtype(), t.device())?;
            let y = json_values(&t)?;
            let out_ok = into(&poisoned).is_ok() && json_values(&poisoned)? == y;
            let _ = writeln!(
                out,
                "\"odtype\":\"{:?}\",\"oshape\":{:?},\"out_ok\":{out_ok},\"y\":{y}}}",
                t.dtype(),
                t.shape()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "\"err\":{:?}}}", e.to_string());
        }
    }
    Ok(())
}

/// Every reduction of `x` (record `xid`): each dims set (with the error cases unless `big`),
/// keepdim, correction; argmax/argmin/softmax/log_softmax on each dim (and one past the end).
fn reduce_all_ways(out: &mut String, xid: usize, x: &Tensor, big: bool) -> Result<()> {
    let nd = x.ndim();
    let mut dim_sets: Vec<Vec<usize>> = (0..nd).map(|d| vec![d]).collect();
    if nd >= 2 {
        dim_sets.push(vec![nd - 1, 0]);
    }
    if nd >= 3 {
        dim_sets.push((0..nd).collect());
    }
    if !big {
        dim_sets.extend([vec![], vec![nd], vec![0, 0]]);
    }
    macro_rules! dims_op {
        ($op:ident, $op_out:ident, $dims:expr, $kd:expr) => {
            record(
                out,
                xid,
                x,
                Call { op: stringify!($op), dims: $dims, keepdim: $kd, correction: 0 },
                || x.$op($dims, $kd),
                |o| tensor_ops::$op_out(x, $dims, $kd, o),
            )?
        };
    }
    for dims in &dim_sets {
        for kd in [false, true] {
            dims_op!(sum, sum_out, dims, kd);
            if !big {
                dims_op!(prod, prod_out, dims, kd);
            }
            dims_op!(mean, mean_out, dims, kd);
            dims_op!(amax, amax_out, dims, kd);
            dims_op!(amin, amin_out, dims, kd);
            dims_op!(all, all_out, dims, kd);
            dims_op!(any, any_out, dims, kd);
            dims_op!(logsumexp, logsumexp_out, dims, kd);
            for c in if big { vec![1] } else { vec![0, 1, 2] } {
                let call = |op| Call { op, dims, keepdim: kd, correction: c };
                record(out, xid, x, call("var"), || x.var(dims, c, kd), |o| tensor_ops::var_out(x, dims, c, kd, o))?;
                record(out, xid, x, call("std"), || x.std(dims, c, kd), |o| tensor_ops::std_out(x, dims, c, kd, o))?;
            }
        }
    }
    for d in 0..if big { nd } else { nd + 1 } {
        let dim = &[d][..];
        for kd in [false, true] {
            let call = |op| Call { op, dims: dim, keepdim: kd, correction: 0 };
            record(out, xid, x, call("argmax"), || x.argmax(d, kd), |o| tensor_ops::argmax_out(x, d, kd, o))?;
            record(out, xid, x, call("argmin"), || x.argmin(d, kd), |o| tensor_ops::argmin_out(x, d, kd, o))?;
        }
        let call = |op| Call { op, dims: dim, keepdim: false, correction: 0 };
        record(out, xid, x, call("softmax"), || x.softmax(d), |o| tensor_ops::softmax_out(x, d, o))?;
        record(out, xid, x, call("log_softmax"), || x.log_softmax(d), |o| tensor_ops::log_softmax_out(x, d, o))?;
    }
    let call = |op| Call { op, dims: &[], keepdim: false, correction: 0 };
    record(out, xid, x, call("sum_all"), || x.sum_all(), |o| tensor_ops::sum_all_out(x, o))?;
    record(out, xid, x, call("mean_all"), || x.mean_all(), |o| tensor_ops::mean_all_out(x, o))?;
    record(out, xid, x, call("amax_all"), || x.amax_all(), |o| tensor_ops::amax_all_out(x, o))?;
    record(out, xid, x, call("amin_all"), || x.amin_all(), |o| tensor_ops::amin_all_out(x, o))?;
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let big = args.iter().any(|a| a == "--big");
    let path = args.iter().find(|a| *a != "--big").cloned().unwrap_or_else(|| "numpy_oracle.jsonl".into());
    let dtypes = DType::ALL;
    let shapes: Vec<Vec<usize>> = if big {
        vec![vec![300, 517], vec![3, 70001], vec![70001, 3], vec![2, 257, 300]]
    } else {
        vec![vec![3, 4, 5], vec![2, 33], vec![0, 3], vec![3, 0], vec![1, 1, 7], vec![5], vec![40, 70], vec![2, 3, 130]]
    };
    // The inputs in order from one generator (the same file on every run), then their
    // reductions in parallel (rayon: the debug build CI runs is slow), written in input order.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut inputs = Vec::new();
    for dt in dtypes {
        let float = dt.is_float();
        for shape in &shapes {
            for layout in ["contiguous", "transposed", "stepped", "expanded", "flipped"] {
                for special in [false, true] {
                    if special && (big || !float) || layout == "expanded" && shape[0] == 0 {
                        continue;
                    }
                    inputs.push(input(&mut rng, dt, shape, layout, special)?);
                }
            }
        }
    }
    // A 0-dim input: no dims to name (errors), the `_all` forms and its one element.
    for dt in if big { vec![] } else { dtypes.to_vec() } {
        inputs.push(Tensor::from_vec(vec![3.0f64], &[])?.to_dtype(dt)?);
    }
    let records: Vec<Result<String>> = inputs
        .par_iter()
        .enumerate()
        .map(|(i, x)| {
            let xid = i + 1;
            let mut out = format!("{{\"xid\":{xid},\"x\":{}}}\n", json_values(x)?);
            reduce_all_ways(&mut out, xid, x, big)?;
            Ok(out)
        })
        .collect();
    let out = records.into_iter().collect::<Result<Vec<String>>>()?.concat();
    std::fs::write(&path, out).map_err(|e| Error::invalid("numpy_oracle", format!("writing {path}: {e}")))?;
    println!("numpy_oracle: wrote {path}");
    Ok(())
}
