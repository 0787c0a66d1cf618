//! A tour of tensor-ops: run with `cargo run --release --example tour`.
//! It exercises what exists and prints what it did.

use tensor_ops::prelude::*;

/// A user-defined op: one definition gives CPU SIMD kernels, CUDA C, three public
/// functions and registry rows, for every dtype of the `float` group (8-bit floats to f64).
#[tensor_op(dtypes = [float])]
fn leaky_relu<T: Float>(x: T, #[param] slope: f32) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::from_f32(slope)
    }
}

/// A user-defined op composed of others: this file's `leaky_relu` and the built-in
/// `sigmoid` are inlined into its CPU SIMD loop and its CUDA C (one pass over memory).
#[tensor_op(dtypes = [f32, f64])]
fn gated_leaky<T: Float>(x: T, #[param] slope: f32) -> T {
    leaky_relu(x, slope) * tensor_ops::sigmoid(x)
}

fn main() -> Result<()> {
    println!("== storage and views");
    let a = Tensor::arange(0, 12, 1, DType::F32, Device::Cpu)?.view(&[3, 4])?;
    println!("a = {a}");
    let at = a.t()?;
    println!(
        "a.t() shape {:?} strides {:?} contiguous={} shares storage={}",
        at.shape(),
        at.strides(),
        at.is_contiguous(),
        at.shares_storage(&a)
    );
    let stepped = a.slice(1, 0, 4, 2)?.flip(0)?;
    println!("a[::-1, ::2] = {stepped}   (strides {:?})", stepped.strides());
    println!("storage use_count = {}", a.storage().use_count());
    let lazy = Tensor::empty(&[1024, 1024], DType::F64, Device::Cpu)?;
    println!("empty 1024x1024 f64 allocated before first write: {}", lazy.storage().is_allocated());
    lazy.fill_(1.5)?;
    println!("                 allocated after fill_: {}", lazy.storage().is_allocated());

    println!("\n== elementwise ops (broadcasting, promotion)");
    let row = Tensor::from_vec(vec![10i32, 20, 30, 40], &[4])?;
    let sum = a.add(&row)?;
    println!("a + [10, 20, 30, 40] (i32 row, promoted to {}) = {sum}", sum.dtype());
    println!("a.t().exp() = {}", at.exp()?);
    println!("a > 5 = {}", a.gt(&Tensor::scalar(5, DType::I64)?)?);
    let out = Tensor::zeros(&[3, 4], DType::F64, Device::Cpu)?;
    tensor_ops::mul_out(&a, &a, &out)?;
    println!("mul_out into an f64 tensor = {out}");
    a.sqrt_()?;
    println!("a.sqrt_() in place = {a}");

    println!("\n== a user-defined op");
    let x = Tensor::from_vec(vec![-2.0f32, -0.5, 0.0, 3.0], &[4])?;
    println!("leaky_relu({x}, 0.1) = {}", leaky_relu(&x, 0.1)?);

    println!("gated_leaky({x}, 0.1) = {}  (composed: leaky_relu(x) * sigmoid(x))", gated_leaky(&x, 0.1)?);
    println!("silu({x}) = {}  (built-in, composed: x * sigmoid(x))", tensor_ops::silu(&x)?);

    println!("\n== fused chains: many ops, one pass over memory");
    use tensor_ops::fuse::Expr;
    let p = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, 0.5], &[4])?;
    let q = Tensor::from_vec(vec![2.0f32, 2.0, -1.0, 4.0], &[4])?;
    let r = Tensor::from_vec(vec![0.5f32], &[1])?; // broadcast
    let (ep, eq, er) = (Expr::input(&p), Expr::input(&q), Expr::input(&r));
    let fused = (&ep * &eq + &er).relu().eval()?;
    let eager = p.mul(&q)?.add(&r)?.relu()?;
    println!("relu(p*q + r) fused = {fused}, eager = {eager}");
    let d = &ep - &eq;
    println!("((p - q)²).sum() fused = {}  (the squares never reach memory)", (&d * &d).sum_all().eval()?);
    match (ep.exp() + Expr::input(&Tensor::zeros(&[3], DType::F32, Device::Cpu)?)).eval() {
        Err(e) => println!("a shape error names the node: {e}"),
        Ok(t) => println!("unexpected: {t}"),
    }

    println!("\n== errors are values");
    match a.add(&Tensor::zeros(&[5], DType::F32, Device::Cpu)?) {
        Err(e) => println!("a + zeros([5]) -> Err: {e}"),
        Ok(t) => println!("unexpected: {t}"),
    }
    match Tensor::from_vec(vec![true, false], &[2])?.exp() {
        Err(e) => println!("exp on bool -> Err: {e}"),
        Ok(t) => println!("exp on bool computes in f32 (as PyTorch): {t}"),
    }
    match Tensor::zeros(&[2], DType::F32, Device::Cuda(0)) {
        Err(e) => println!("a CUDA tensor here -> Err: {e}"),
        Ok(t) => println!("CUDA tensor: {t}"),
    }

    println!("\n== reductions, on any axis of any view");
    let m = Tensor::arange(0, 12, 1, DType::F32, Device::Cpu)?.view(&[3, 4])?;
    println!("m = {m}");
    println!("m.sum(&[0], false) = {}", m.sum(&[0], false)?);
    println!("m.t().amax(&[1], true) = {}", m.t()?.amax(&[1], true)?);
    println!("m.argmax(1, false) = {}", m.argmax(1, false)?);
    println!("m.var(&[1], 1, false) = {}", m.var(&[1], 1, false)?);
    println!("m.softmax(1) = {}", m.softmax(1)?);

    println!("\n== 8-bit floats (E4M3 \"fn\", E5M2): every float op and your op, computed in f32, rounded once");
    let w = Tensor::from_vec(vec![0.3f32, -1.7, 300.0, 1000.0], &[4])?;
    let w8 = w.to_dtype(DType::F8E4M3)?; // round to nearest even; E4M3 saturates at ±448
    println!("{w} as f8e4m3 = {w8}   as f8e5m2 = {}", w.to_dtype(DType::F8E5M2)?);
    println!("leaky_relu(w8, 0.1) = {}", leaky_relu(&w8, 0.1)?);
    println!("w8.sum() = {} (734.6 rounds to E4M3, which saturates at 448)", w8.sum_all()?);
    println!("w8.add(&w) (an f32 operand) promotes to {}", w8.add(&w)?.dtype());

    println!("\n== quantized tensors (qint8/quint8/qint32, per tensor or per channel): ops dequantize, compute in f32, quantize once");
    let x = Tensor::from_vec(vec![-1.0f32, -0.25, 0.3, 0.45, 1.0, 2.6], &[2, 3])?;
    let q = tensor_ops::quantize_per_tensor(&x, 0.1, 5, DType::QInt8)?; // round half to even, saturate
    println!("{x} quantized = {q}\n  stored integers {}", q.int_repr()?);
    println!("relu(q) keeps q's quantizer: {}", q.relu()?);
    let out =
        Tensor::empty_quantized(&[2, 3], &tensor_ops::Quantizer::per_tensor(DType::QUInt8, 0.05, 128)?, Device::Cpu)?;
    tensor_ops::add_out(&q, &q, &out)?; // the output's scale and zero point: quantized::add(qa, qb, 0.05, 128)
    println!("q + q into quint8 (scale 0.05, zero point 128) = {out}");
    let scales = Tensor::from_vec(vec![0.01f64, 0.05], &[2])?;
    let pc =
        tensor_ops::quantize_per_channel(&x, &scales, &Tensor::zeros(&[2], DType::I64, Device::Cpu)?, 0, DType::QInt8)?;
    println!("per channel along dim 0: {pc}; transposed, the axis moves: {}", pc.t()?.q_per_channel_axis()?);
    println!("q.sum() (of the values) = {}", q.sum_all()?);

    println!("\n== sparse tensors (COO and CSR, CPU): your op and a reduction over the stored values");
    let idx = Tensor::from_vec(vec![0i64, 1, 1, 2, 0, 2], &[2, 3])?; // (0,2) (1,0) (1,2)
    let vals = Tensor::from_vec(vec![-3.0f32, 4.0, -5.0], &[3])?;
    let s = Tensor::sparse_coo(&idx, &vals, &[2, 3])?;
    println!("s = {s}");
    let leaky = leaky_relu(&s, 0.1)?; // maps 0 to 0: runs over the 3 stored values only
    println!("leaky_relu(s, 0.1) ({:?}) = {}", leaky.layout(), leaky.to_dense()?);
    let rows = s.sum(&[1], false)?; // a sparse dim kept: the result stays COO
    println!("s.sum(&[1], false) ({:?}) = {}; s.sum_all() = {}", rows.layout(), rows.to_dense()?, s.sum_all()?);
    println!("s as CSR: crow {}", s.to_sparse_csr()?.crow_indices()?);
    let t = Tensor::sparse_coo(
        &Tensor::from_vec(vec![0i64, 0], &[2, 1])?,
        &Tensor::from_vec(vec![2.0f32], &[1])?,
        &[2, 3],
    )?;
    println!("s + t (the union of the patterns) = {}", s.add(&t)?.to_dense()?);
    let scale = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3])?;
    println!("s * [10, 20, 30] (s's pattern, stays sparse) = {}", s.mul(&scale)?);
    println!("s.amax(&[1]) (implicit zeros count) = {}", s.amax(&[1], false)?.to_dense()?);
    println!("softmax(s, 1) (unspecified entries are -inf) = {}", s.softmax(1)?.to_dense()?);
    match s.exp() {
        Err(e) => println!("exp(s) -> Err: {e}"),
        Ok(t) => println!("unexpected: {t}"),
    }

    println!("\n== zero-copy exchange: ndarray, safetensors, DLPack");
    let arr = tensor_ops::tensor_core::ndarray::Array::from_shape_vec((2, 3), vec![1.0f32, 2., 3., 4., 5., 6.])
        .unwrap()
        .into_dyn();
    let arr_ptr = arr.as_ptr();
    let from_nd = Tensor::from_ndarray(arr)?; // adopts the array's buffer
    let doubled = from_nd.mul(&Tensor::scalar(2.0, DType::F32)?)?;
    let back = doubled.t()?.to_ndarray::<f32>()?;
    println!(
        "ndarray → tensor (same buffer: {}) → ×2, transposed → ndarray:\n{back}",
        from_nd.to_dlpack()?.first_element() == arr_ptr.cast()
    );
    let path = std::env::temp_dir().join(format!("tensor-ops-tour-{}.safetensors", std::process::id()));
    tensor_ops::safetensors_io::save(&path, &[("doubled", &doubled), ("m", &m.t()?)])?;
    for (name, t) in tensor_ops::safetensors_io::load(&path)? {
        // Views of the memory-mapped file: read-only, so writes are errors.
        println!("loaded {name}: {t} (read-only: {}, fill_ → {:?})", t.storage().is_read_only(), t.fill_(0.0).is_err());
    }
    let _ = std::fs::remove_file(&path);
    let exported = m.flip(1)?.to_dlpack()?;
    println!("DLPack export of m.flip(1): shape {:?}, strides {:?}", exported.shape(), exported.strides());
    println!("imported back: {}", Tensor::from_dlpack(exported)?);

    println!("\n== the dispatch registry (op × device × layouts → dtypes; internal steps left out)");
    // One line per op, device and dtype list, with the layouts that have those rows: every
    // elementwise op has rows under the sparse layouts too (the same kernel, run over the
    // stored values).
    let mut lines: std::collections::BTreeMap<(&str, String, String), Vec<String>> = Default::default();
    let user = tensor_ops::registry().user_entries();
    for (op, device, layout, dtypes) in &user {
        let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
        lines.entry((op, device.to_string(), names.join(" "))).or_default().push(format!("{layout:?}"));
    }
    for ((op, device, dtypes), layouts) in lines {
        println!("{op:>10} {device:>4} {:<28} {dtypes}", layouts.join("+"));
    }
    // The sparse calls chain these steps (conversions, coalescing, lookups, products): rows
    // keyed by the sparse layouts.
    println!("\n== the sparse layouts' steps (op × device × layout → dtypes)");
    for (op, device, layout, dtypes) in tensor_ops::registry().entries() {
        if layout != tensor_ops::Layout::Strided && !user.iter().any(|u| u.0 == op) {
            let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
            println!("{op:>26} {device:>4} {layout:?}  {}", names.join(" "));
        }
    }
    Ok(())
}
