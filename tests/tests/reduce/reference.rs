//! A naive index-by-index model of every built-in reduction, in f64 (i64 for integer
//! sums), independent of the library's kernels: elements are gathered per output in the
//! logical row-major order of the reduced dims.

/// The values of one output's reduced elements, with their logical indices.
pub fn gather(shape: &[usize], values: &[f64], dims: &[usize], out_index: &[usize]) -> Vec<f64> {
    let red: Vec<usize> = dims.to_vec();
    let n: usize = red.iter().map(|&d| shape[d]).product();
    let mut idx: Vec<usize> = vec![0; shape.len()];
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !red.contains(d)).collect();
    for (k, &d) in kept.iter().enumerate() {
        idx[d] = out_index[k];
    }
    let mut res = Vec::with_capacity(n);
    for p in 0..n {
        let mut q = p;
        for &d in red.iter().rev() {
            idx[d] = q % shape[d];
            q /= shape[d];
        }
        let mut lin = 0;
        for d in 0..shape.len() {
            lin = lin * shape[d] + idx[d];
        }
        res.push(values[lin]);
    }
    res
}

/// Every output index (over the kept dims, row-major).
pub fn outputs(shape: &[usize], dims: &[usize]) -> Vec<Vec<usize>> {
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).map(|d| shape[d]).collect();
    let m: usize = kept.iter().product();
    (0..m)
        .map(|mut p| {
            let mut idx = vec![0; kept.len()];
            for k in (0..kept.len()).rev() {
                idx[k] = p % kept[k];
                p /= kept[k];
            }
            idx
        })
        .collect()
}

/// The reference of `op` over `xs`; `ints` when the input is bool/integer (sum/prod wrap
/// in i64 then).
pub fn reduce(op: &str, xs: &[f64], ints: bool, correction: f64) -> f64 {
    let n = xs.len() as f64;
    match op {
        "sum" if ints => xs.iter().fold(0i64, |a, &x| a.wrapping_add(x as i64)) as f64,
        "prod" if ints => xs.iter().fold(1i64, |a, &x| a.wrapping_mul(x as i64)) as f64,
        "sum" => xs.iter().sum(),
        "prod" => xs.iter().product(),
        "mean" => xs.iter().sum::<f64>() / n,
        "amax" => xs.iter().fold(f64::NEG_INFINITY, |a, &x| if a.is_nan() || x.is_nan() { f64::NAN } else { a.max(x) }),
        "amin" => xs.iter().fold(f64::INFINITY, |a, &x| if a.is_nan() || x.is_nan() { f64::NAN } else { a.min(x) }),
        "all" => xs.iter().all(|&x| x != 0.0) as i32 as f64,
        "any" => xs.iter().any(|&x| x != 0.0) as i32 as f64,
        "logsumexp" => {
            let m = xs.iter().fold(f64::NEG_INFINITY, |a, &x| a.max(x));
            if m == f64::NEG_INFINITY {
                return m;
            }
            m + xs.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
        }
        "var" | "std" => {
            let mean = xs.iter().sum::<f64>() / n;
            let m2: f64 = xs.iter().map(|&x| (x - mean) * (x - mean)).sum();
            let v = m2 / (n - correction).max(0.0);
            if op == "std" {
                v.sqrt()
            } else {
                v
            }
        }
        "argmax" | "argmin" => {
            let mut best = 0;
            for (i, &x) in xs.iter().enumerate() {
                let b = xs[best];
                if b.is_nan() {
                    break;
                }
                if x.is_nan() || (op == "argmax" && x > b) || (op == "argmin" && x < b) {
                    best = i;
                }
            }
            best as f64
        }
        other => panic!("no reference for {other}"),
    }
}
