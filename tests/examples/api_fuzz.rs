//! Random calls of the public API with hostile arguments: every call must return `Ok` or an
//! `Err`, never panic. Tensors of every dtype (plain and quantized), ranks 0 to 4, extents
//! 0 to 5, as contiguous, transposed, flipped, stepped and expanded views; then views,
//! growth, casts, copies, fills, maps, reductions, quantization, sparse conversions and
//! products and CUDA calls without a driver, with dims, extents, steps, scales and strides
//! drawn from edge values (0, 1, `usize::MAX`, `-1 as usize`, NaN, ±∞, 2^40, ...).
//!
//! ```sh
//! cargo run --release -p tensor-tests --example api_fuzz -- [calls] [seed]
//! ```
//! Prints each panicking call (op, arguments, message) and exits 1 if there was one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor};

#[path = "fuzz/rng.rs"]
mod rng;
use rng::Rng;

/// A tensor of `dtype` and `shape` with varied values (quantized: from f32 values), then
/// one of five views of it.
fn tensor(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|i| ((i * 37 % 23) as f64 - 11.0) * 0.75).collect();
    let base = Tensor::from_vec(values, shape)?;
    let t = if dtype.is_quantized() {
        let scale = rng.pick(&[0.1, 0.5, 1.0, 1e-3]);
        let zp = if dtype == DType::QUInt8 { 128 } else { 0 };
        if shape.is_empty() || rng.coin() {
            quantize_per_tensor(&base.to_dtype(DType::F32)?, scale, zp, dtype)?
        } else {
            let axis = rng.below(shape.len());
            let c = shape[axis];
            let scales = Tensor::full(&[c], scale, DType::F64, Device::Cpu)?;
            let zps = Tensor::full(&[c], zp, DType::I64, Device::Cpu)?;
            quantize_per_channel(&base.to_dtype(DType::F32)?, &scales, &zps, axis, dtype)?
        }
    } else {
        base.to_dtype(dtype)?
    };
    Ok(match rng.below(5) {
        0 if t.ndim() >= 2 => t.transpose(0, t.ndim() - 1)?,
        1 if t.ndim() >= 1 => t.flip(0)?,
        2 if t.ndim() >= 1 && t.shape()[0] >= 2 => t.slice(0, 0, t.shape()[0], 2)?,
        3 if t.ndim() >= 1 && t.shape()[0] == 1 => {
            let mut s = t.shape().to_vec();
            s[0] = 3;
            t.expand(&s)?
        }
        _ => t,
    })
}

fn random_tensor(rng: &mut Rng) -> Result<Tensor> {
    let dtype = rng.dtype();
    // one in sixteen large enough for the SIMD, tiled and parallel paths
    let shape = if rng.below(16) == 0 {
        rng.pick(&[&[70_001][..], &[300, 257], &[3, 129, 130], &[40_000, 3], &[2, 65_537]]).to_vec()
    } else {
        rng.shape(false)
    };
    tensor(rng, dtype, &shape)
}

/// An index tensor (i64 or i32) of `shape` whose values are mostly in `0..=bound`, some
/// out of range or negative.
fn indices(rng: &mut Rng, shape: &[usize], bound: usize) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n)
        .map(|_| match rng.below(12) {
            0 => rng.pick(&[-1, i64::MIN, i64::MAX, 1 << 40, i32::MAX as i64 + 1]),
            _ => rng.below(bound + 1) as i64,
        })
        .collect();
    let t = Tensor::from_vec(v, shape)?;
    if rng.coin() {
        t.to_dtype(DType::I32)
    } else {
        Ok(t)
    }
}

/// Panics naming the first element where `got` and `want` differ, if one does.
fn same(got: &[u64], want: &[u64], what: &str, a: &Tensor) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        let f = |v: Option<&u64>| v.map(|&b| if b == u64::MAX { f64::NAN } else { f64::from_bits(b) });
        panic!(
            "{what}: {:?} {:?} strides {:?}: element {i} of {} is {:?}, want {:?} ({} differ)",
            a.dtype(),
            a.shape(),
            a.strides(),
            got.len(),
            f(got.get(i)),
            f(want.get(i)),
            got.iter().zip(want).filter(|(g, w)| g != w).count()
        );
    }
}

/// A tensor's elements as comparable bits (the stored integers of a quantized one).
fn bits(t: &Tensor) -> Option<Vec<u64>> {
    let t = if t.dtype().is_quantized() { t.int_repr().ok()? } else { t.clone() };
    let v = t.to_dtype(DType::F64).ok()?.to_vec::<f64>().ok()?;
    Some(v.into_iter().map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() }).collect())
}

/// Writes through views that alias their own inputs must give what the same op gives on a
/// private copy of the inputs: `copy_` from a flip and from a transpose of the output
/// itself, `add_out` with the output as both inputs, one of them flipped. A difference is
/// a panic, which the caller reports.
fn aliased(a: &Tensor) -> Option<()> {
    if a.ndim() == 0 || a.numel() == 0 {
        return None;
    }
    let x = a.deep_clone().ok()?;
    let flipped = bits(&x.flip(0).ok()?.contiguous().ok()?)?;
    x.copy_(&x.flip(0).ok()?).ok()?;
    same(&bits(&x)?, &flipped, "copy_ of its own flip", a);
    if a.ndim() >= 2 && a.shape()[0] == a.shape()[1] {
        let y = a.deep_clone().ok()?;
        let t = bits(&y.transpose(0, 1).ok()?.contiguous().ok()?)?;
        y.copy_(&y.transpose(0, 1).ok()?).ok()?;
        same(&bits(&y)?, &t, "copy_ of its own transpose", a);
    }
    let z = a.deep_clone().ok()?;
    let fresh = z.deep_clone().ok()?;
    if let Ok(want) = fresh.add(&fresh.flip(0).ok()?)
        && want.dtype() == z.dtype()
        && tensor_ops::add_out(&z, &z.flip(0).ok()?, &z).is_ok()
    {
        same(&bits(&z)?, &bits(&want)?, "add_out(x, x.flip(0), x)", a);
    }
    Some(())
}

/// Everything a user does with a sparse tensor, results dropped.
fn use_sparse(s: &Tensor, b: &Tensor) {
    let _ = (s.to_dense(), s.coalesce(), s.sum_all(), s.add(b), s.mul(s), s.to_sparse_csr(), s.to_sparse_coo());
    let _ = (s.spmv(b), s.spmm(b), s.exp(), s.to_dtype(DType::F64), s.t(), s.contiguous(), s.to_vec::<f32>());
    let _ = s.to_device(Device::Cuda(0));
    let n = s.shape().last().copied().unwrap_or(0).min(1 << 16);
    if let Ok(v) = Tensor::ones(&[n], DType::F32, Device::Cpu) {
        let _ = s.spmv(&v);
    }
    if let Ok(m) = Tensor::ones(&[n, 3], DType::F32, Device::Cpu) {
        let _ = s.spmm(&m);
    }
}

/// One random call on `a` (and `b`): its description, run inside `catch_unwind` by the
/// caller. The result is dropped: only panics matter here.
fn call<'a>(rng: &mut Rng, a: &'a Tensor, b: &'a Tensor) -> (String, Box<dyn FnOnce() + 'a>) {
    let (d0, d1, d2) = (rng.index(), rng.index(), rng.index());
    let dims = rng.dims();
    let keep = rng.coin();
    let dt = rng.dtype();
    let pd = rng.plain_dtype();
    let f = rng.f64();
    let i = rng.i64();
    let s = rng.scalar();
    let shape = rng.shape(true);
    let ishape: Vec<isize> = (0..rng.below(5)).map(|_| rng.isize()).collect();
    let strides: Vec<isize> = (0..shape.len()).map(|_| rng.isize()).collect();
    let which = rng.below(53);
    macro_rules! go {
        ($what:expr, $body:expr) => {
            (
                format!("{} on {:?} {:?} / {:?} {:?}", $what, a.dtype(), a.shape(), b.dtype(), b.shape()),
                Box::new(move || {
                    let _ = $body;
                }),
            )
        };
    }
    match which {
        0 => go!(format!("view({ishape:?})"), a.view(&ishape)),
        1 => go!(format!("reshape({ishape:?})"), a.reshape(&ishape)),
        2 => go!(format!("transpose({d0}, {d1})"), a.transpose(d0, d1)),
        3 => go!(format!("permute({dims:?})"), a.permute(&dims)),
        4 => go!(format!("narrow({d0}, {d1}, {d2})"), a.narrow(d0, d1, d2)),
        5 => go!(format!("select({d0}, {d1})"), a.select(d0, d1)),
        6 => go!(format!("slice({d0}, {d1}, {d2}, {})", dims.first().copied().unwrap_or(0)), {
            a.slice(d0, d1, d2, dims.first().copied().unwrap_or(0))
        }),
        7 => go!(format!("expand({shape:?})"), a.expand(&shape)),
        8 => go!(format!("broadcast_to({shape:?})"), a.broadcast_to(&shape)),
        9 => go!(format!("squeeze({d0}) / unsqueeze({d1})"), (a.squeeze(d0), a.unsqueeze(d1))),
        10 => go!(format!("flip({d0}) / flatten"), (a.flip(d0), a.flatten())),
        11 => go!(format!("as_strided({shape:?}, {strides:?}, {d0})"), a.as_strided(&shape, &strides, d0)),
        12 => go!(format!("resize_({shape:?})"), a.clone().resize_(&shape)),
        13 => {
            // (a growth of 10^10 % is a valid request for a giant buffer, just a slow one)
            let growth = [0, 50, 100, usize::MAX][d2 % 4];
            go!(format!("reserve({d0}) / extend_({d1}, {growth})"), {
                if let Ok(mut c) = a.deep_clone() {
                    let _ = c.reserve(d0);
                    let _ = c.extend_(d1, growth);
                }
            })
        }
        14 => go!(format!("shrink_to({d0}) / share_data"), {
            if let Ok(mut c) = a.deep_clone() {
                let _ = c.shrink_to(d0);
                let _ = c.share_data(b);
            }
        }),
        15 => go!(format!("to_dtype({dt:?})"), a.to_dtype(dt)),
        16 => go!("copy_", a.deep_clone().map(|c| c.copy_(b))),
        17 => go!(format!("fill_({s:?})"), a.deep_clone().map(|c| c.fill_(s))),
        18 => go!("item / to_vec", (a.item(), a.to_vec::<f32>(), a.to_vec::<i64>(), a.contiguous())),
        19 => go!(format!("full({shape:?}, {s:?}, {dt:?})"), Tensor::full(&shape, s, dt, Device::Cpu)),
        20 => go!(format!("zeros/ones/empty({shape:?}, {dt:?})"), {
            (
                Tensor::zeros(&shape, dt, Device::Cpu),
                Tensor::ones(&shape, dt, Device::Cpu),
                Tensor::empty(&shape, dt, Device::Cpu),
            )
        }),
        21 => {
            // counts either small or far past any memory (a count of 10^9 is valid and slow)
            let end = [i64::MAX, i64::MIN, 5, -5, 0][d0 % 5];
            let step = [1, -1, 0, i64::MAX, i64::MIN, i / 3][d1 % 6];
            go!(format!("arange({i}, {end}, {step}, {pd:?})"), Tensor::arange(i, end, step, pd, Device::Cpu))
        }
        22 => go!("add/sub/mul/div", (a.add(b), a.sub(b), a.mul(b), a.div(b))),
        23 => go!("maximum/minimum/pow", (tensor_ops::maximum(a, b), tensor_ops::minimum(a, b), tensor_ops::pow(a, b))),
        24 => go!("eq/lt/ge", (tensor_ops::eq(a, b), tensor_ops::lt(a, b), tensor_ops::ge(a, b))),
        25 => go!("neg/abs/exp/log/sqrt/relu", {
            (a.neg(), tensor_ops::abs(a), a.exp(), tensor_ops::log(a), tensor_ops::sqrt(a), a.relu())
        }),
        26 => go!("sigmoid/tanh/sin/silu", {
            (tensor_ops::sigmoid(a), tensor_ops::tanh(a), tensor_ops::sin(a), tensor_ops::silu(a))
        }),
        27 => go!("add_out(a, b, a) / exp_out(b, a)", (tensor_ops::add_out(a, b, a), tensor_ops::exp_out(b, a))),
        28 => go!("add_out(a, a, b)", tensor_ops::add_out(a, a, b)),
        29 => go!(
            format!("sum/mean/prod({dims:?}, {keep})"),
            (a.sum(&dims, keep), a.mean(&dims, keep), a.prod(&dims, keep))
        ),
        30 => go!(format!("amax/amin/all/any({dims:?}, {keep})"), {
            (a.amax(&dims, keep), a.amin(&dims, keep), a.all(&dims, keep), a.any(&dims, keep))
        }),
        31 => go!(format!("var/std({dims:?}, {i}, {keep})"), (a.var(&dims, i, keep), a.std(&dims, i, keep))),
        32 => go!(format!("logsumexp({dims:?})"), a.logsumexp(&dims, keep)),
        33 => go!(format!("argmax/argmin({d0}, {keep})"), (a.argmax(d0, keep), a.argmin(d0, keep))),
        34 => go!(format!("softmax/log_softmax({d0})"), (a.softmax(d0), a.log_softmax(d0))),
        35 => go!("*_all", (a.sum_all(), a.mean_all(), a.amax_all(), a.amin_all())),
        36 => go!(format!("quantize_per_tensor({f}, {i}, {dt:?})"), quantize_per_tensor(a, f, i, dt)),
        37 => go!(format!("quantize_per_channel(b, b, {d0}, {dt:?})"), quantize_per_channel(a, b, b, d0, dt)),
        38 => go!(format!("quantize_per_channel(scales {f}, zps {i}, {d0}, {dt:?})"), {
            let c = a.shape().get(d0).copied().unwrap_or(1);
            let scales = Tensor::full(&[c], f, DType::F64, Device::Cpu);
            let zps = Tensor::full(&[c], i, DType::I64, Device::Cpu);
            match (scales, zps) {
                (Ok(s), Ok(z)) => Some(quantize_per_channel(a, &s, &z, d0, dt)),
                _ => None,
            }
        }),
        39 => go!("dequantize/int_repr/q_*", {
            (
                a.dequantize(),
                a.int_repr(),
                a.q_scale(),
                a.q_zero_point(),
                a.q_per_channel_scales(),
                a.q_per_channel_zero_points(),
                a.q_per_channel_axis(),
            )
        }),
        40 => go!(format!("to_sparse({d0}) / coo / csr"), (a.to_sparse(d0), a.to_sparse_coo(), a.to_sparse_csr())),
        41 => go!(format!("to_sparse_csr_hybrid({d0}) / to_dense"), {
            (a.to_sparse_csr_hybrid(d0), a.to_sparse_coo().and_then(|s| s.to_dense()))
        }),
        42 => go!("spmv/spmm", {
            let csr = a.to_sparse_csr();
            csr.map(|c| (c.spmv(b), c.spmm(b), c.spmm(a), c.spmv(&c)))
        }),
        43 => go!("sparse values", {
            let coo = a.to_sparse_coo();
            coo.map(|c| (c.add(b), c.sum_all(), c.to_dtype(dt), c.contiguous(), c.t(), c.exp()))
        }),
        44 => go!("to_device(Cuda(0)) and an op there", {
            a.to_device(Device::Cuda(0)).map(|g| (g.add(&g), g.sum_all(), g.to_vec::<f32>(), g.to_device(Device::Cpu)))
        }),
        45 => go!(format!("Cuda tensors: zeros({shape:?}, {dt:?})"), {
            (
                Tensor::zeros(&shape, dt, Device::Cuda((d0 % 4) as u32)),
                Tensor::zeros(&shape, dt, Device::Cuda(0)).map(|z| z.add(a)),
            )
        }),
        46 => go!("fused relu(a * b + a)", {
            use tensor_ops::fuse::Expr;
            let e = Expr::input(a).mul(Expr::input(b)).add(Expr::input(a)).relu();
            e.eval()
        }),
        47 => {
            // safetensors: save both, corrupt a byte of the header or the data, load
            let at = rng.next();
            let byte = rng.next() as u8;
            go!(format!("safetensors save/corrupt({at:#x}, {byte:#x})/load"), {
                let dir = std::env::temp_dir().join(format!("api_fuzz_{}", std::process::id()));
                let _ = std::fs::create_dir_all(&dir);
                let path = dir.join("t.safetensors");
                if tensor_ops::safetensors_io::save(&path, &[("a", a), ("b", b)]).is_ok()
                    && let Ok(mut bytes) = std::fs::read(&path)
                {
                    // mostly the 8-byte length and the JSON header (names, dtypes, shapes,
                    // offsets, the quantizers in the metadata)
                    let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
                    let span = if at & 3 == 0 { bytes.len() } else { header.min(bytes.len()) };
                    let i = (at >> 2) as usize % span.max(1);
                    bytes[i] = if at & 4 == 0 { byte } else { bytes[i].wrapping_add(1) };
                    if at & 8 == 0 {
                        bytes.truncate(i.max(1));
                    }
                    let _ = std::fs::write(&path, &bytes);
                    if let Ok(ts) = tensor_ops::safetensors_io::load(&path) {
                        for (_, t) in ts {
                            let _ = (t.to_vec::<f32>(), t.dequantize(), t.add(&t), t.sum_all(), t.contiguous());
                        }
                    }
                }
            })
        }
        48 => {
            // COO from user indices: some out of range, negative, duplicated
            let sd = 1 + rng.below(2);
            let nnz = rng.below(6);
            let shape: Vec<usize> = (0..sd + rng.below(2)).map(|_| rng.below(5)).collect();
            let bound = shape.iter().copied().max().unwrap_or(1);
            let idx = indices(rng, &[sd, nnz], bound);
            let vals = tensor(rng, pd, &[nnz]);
            go!(format!("sparse_coo([{sd}, {nnz}], {shape:?}) and its ops"), {
                if let (Ok(i), Ok(v)) = (idx, vals)
                    && let Ok(s) = Tensor::sparse_coo(&i, &v, &shape)
                {
                    use_sparse(&s, b);
                }
            })
        }
        49 => {
            // CSR from user row pointers and columns
            let rows = rng.below(5);
            let cols = rng.below(5);
            let nnz = rng.below(7);
            let crow = indices(rng, &[rows + 1], nnz);
            let col = indices(rng, &[nnz], cols);
            let vals = tensor(rng, pd, &[nnz]);
            let shape = if rng.below(4) == 0 { vec![rows, cols, 2] } else { vec![rows, cols] };
            go!(format!("sparse_csr({rows}x{cols}, nnz {nnz}, {shape:?}) and its ops"), {
                if let (Ok(c), Ok(k), Ok(v)) = (crow, col, vals)
                    && let Ok(s) = Tensor::sparse_csr(&c, &k, &v, &shape)
                {
                    use_sparse(&s, b);
                }
            })
        }
        50 => {
            let name = rng.pick(&["add", "mul", "exp", "relu", "where", "nope", "sum", "pow", "eq", "silu"]);
            let n = rng.below(4);
            let params: Vec<Scalar> = (0..rng.below(3)).map(|_| rng.scalar()).collect();
            go!(format!("Expr::call({name}, {n} args, {params:?})"), {
                use tensor_ops::fuse::Expr;
                let (x, y) = (Expr::input(a), Expr::input(b));
                let args: Vec<&Expr> = [&x, &y, &x].into_iter().take(n).collect();
                if let Ok(e) = Expr::call(name, &args, &params) {
                    let _ = (e.eval(), e.add(&x).eval(), e.eval_into(a), e.sum(&dims, keep).eval());
                }
            })
        }
        51 => go!("aliased copies and maps (values checked)", aliased(a)),
        _ => go!(format!("from_vec(len {}, {shape:?})", d0 % 1000), {
            Tensor::from_vec(vec![1.0f32; d0 % 1000], &shape)
        }),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x5EED);
    let message: Arc<Mutex<String>> = Arc::default();
    let m = message.clone();
    std::panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        *m.lock().unwrap() = format!("{}{at}", info.payload_as_str().unwrap_or("(non-string panic)"));
    }));
    // A watchdog: a call running for more than ten seconds is reported (a hang is a defect).
    let current: Arc<Mutex<(std::time::Instant, String, bool)>> =
        Arc::new(Mutex::new((std::time::Instant::now(), String::new(), true)));
    let watched = current.clone();
    std::thread::spawn(move || {
        let mut reported = String::new();
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let (since, what, done) = watched.lock().unwrap().clone();
            if !done && since.elapsed().as_secs() >= 10 && what != reported {
                println!("slow call (10 s and more): {what}");
                reported = what;
            }
        }
    });
    let mut rng = Rng(seed.wrapping_mul(1 << 32));
    let mut panics = std::collections::BTreeMap::<String, (usize, String)>::new();
    let mut ran = 0;
    for _ in 0..calls {
        let (a, b) = match (random_tensor(&mut rng), random_tensor(&mut rng)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                if std::env::var_os("FUZZ_VERBOSE").is_some() {
                    println!("input not made: {e}");
                }
                continue;
            }
        };
        ran += 1;
        let (what, f) = call(&mut rng, &a, &b);
        *current.lock().unwrap() = (std::time::Instant::now(), what.clone(), false);
        let panicked = catch_unwind(AssertUnwindSafe(f)).is_err();
        current.lock().unwrap().2 = true;
        if panicked {
            let msg = message.lock().unwrap().clone();
            let key = msg.split(" at ").nth(1).unwrap_or(&msg).to_string();
            let entry = panics.entry(key).or_insert((0, format!("{what}: {msg}")));
            entry.0 += 1;
        }
    }
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("api_fuzz_{}", std::process::id())));
    for (n, first) in panics.values() {
        println!("{n} panics like: {first}");
    }
    println!("{ran} of {calls} calls made (the rest: inputs not made), {} distinct panic sites", panics.len());
    if !panics.is_empty() {
        std::process::exit(1);
    }
}
