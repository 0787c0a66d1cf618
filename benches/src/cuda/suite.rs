//! The `cuda-perf` measurement: each case at 1 MiB … 1 GiB on `Device::Cuda(0)`, timed with
//! CUDA events after an L2 flush (median of ≥ 20 runs), beside a device-to-device memcpy of
//! the same array size measured in the same run.

use super::adapter::Gpu;
use crate::cases::{Case, Op};
use crate::cli::Options;
use crate::error::BenchResult;
use crate::machine;
use crate::report::{Entry, Metric, Report};
use crate::timing::median;
use tensor_ops::{DType, Device, Tensor};

/// The device every case runs on.
pub const DEVICE: Device = Device::Cuda(0);

/// Timed runs per case (the median is reported); at least 20.
pub const RUNS: usize = 25;

/// Array sizes: 1 MiB, 4, 16, 64, 256 MiB, 1 GiB (quick: 1 and 16 MiB).
pub fn sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![1 << 20, 16 << 20]
    } else {
        (0..6).map(|i| 1u64 << (20 + 2 * i)).collect()
    }
}

/// The GPU bench set at one size: the CPU set's f32 ops with preallocated outputs where the
/// op has one, the reductions along the last and the first dim, the fused chains (fused and
/// eager) and silu, plus f16 and i64 transpose and add, and the qint8 cases.
pub fn cuda_set(bytes: u64) -> Vec<Case> {
    // Every op of the CPU set but exp and relu into a new result (their `_out` forms are
    // measured) and the eager sum((a-b)^2) (the eager triad is).
    let mut v: Vec<Case> = Op::ALL
        .into_iter()
        .filter(|op| !matches!(op, Op::ExpNew | Op::ReluNew | Op::EagerSqDiffSum | Op::QuantizePerChannel))
        .map(|op| Case::new(op, DType::F32, bytes))
        .collect();
    for dt in [DType::F16, DType::I64] {
        v.push(Case::new(Op::Transpose, dt, bytes));
        v.push(Case::new(Op::AddOut, dt, bytes));
    }
    // qint8: quantize per tensor and per channel, dequantize, add into a chosen quantizer, relu
    for op in [Op::CastFromF32, Op::QuantizePerChannel, Op::CastToF32, Op::AddOut, Op::ReluNew] {
        v.push(Case::new(op, DType::QInt8, bytes));
    }
    v
}

/// Whether the stand-in runs `case`: every case but the reductions beyond the sum along
/// each dim (the other reducers launch the same row and column kernels with other folds,
/// which `tests/tests/cuda_device.rs` runs; each costs the stand-in a host compile).
fn on_standin(case: &Case) -> bool {
    // (of the quantized cases, the quantize: the others' kernels are run by cuda_device.rs)
    let plain = !case.op.is_reduction() || matches!(case.op, Op::SumLast | Op::SumFirst);
    plain && (!case.dtype.is_quantized() || case.op == Op::CastFromF32)
}

/// Whether the stand-in runs a GPU-only case: a packed 1-byte map, a cast and a map with a
/// broadcast row (each other case's kernel costs the stand-in a host compile;
/// `tests/tests/cuda_device.rs` runs them).
fn extra_on_standin(key: &str) -> bool {
    key.starts_with("add_out/u8/") || key.starts_with("cast_f16/") || key.starts_with("add_row/")
}

/// Opens the GPU, or says why there is none (`Ok(None)`: the runner exits 0).
fn open() -> Option<Gpu> {
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            println!("cuda-perf: skipped, no usable GPU: {e}");
            return None;
        }
    };
    if let Err(e) = Tensor::empty(&[1], DType::F32, DEVICE) {
        println!("cuda-perf: skipped, tensor-ops cannot create a CUDA tensor: {e}");
        return None;
    }
    Some(gpu)
}

/// Median seconds of `RUNS` (or 5 when quick) event-timed calls after 3 warm-up calls.
fn time_median(gpu: &mut Gpu, quick: bool, f: &mut dyn FnMut() -> BenchResult<()>) -> BenchResult<f64> {
    for _ in 0..3 {
        f()?;
    }
    gpu.synchronize()?;
    let runs = if quick { 5 } else { RUNS };
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        t.push(gpu.time(f)?);
    }
    Ok(median(&t).unwrap_or(0.0))
}

/// True for the CPU-backed stand-in of the CUDA driver (tests): it runs every path, but its
/// timings say nothing about a GPU.
fn is_standin(gpu: &Gpu) -> bool {
    gpu.name().contains("stand-in")
}

/// Runs the GPU bench set selected by `opts`; `Ok(None)` when there is no GPU, and on the
/// CPU-backed stand-in (which runs the quick set end to end and prints its table, but whose
/// figures are not compared with any baseline).
pub fn run(opts: &Options) -> BenchResult<Option<Report>> {
    let Some(mut gpu) = open() else { return Ok(None) };
    let standin = is_standin(&gpu);
    if standin {
        println!(
            "cuda-perf: running on the CPU-backed CUDA stand-in ({}): every path runs, but its figures \
             mean nothing for a GPU; the quick set at 1 MiB (of the reductions, the sums), and the gate is not applied",
            gpu.name()
        );
    }
    let sizes = match (&opts.sizes_mib, standin) {
        (_, true) => vec![1 << 20],
        (Some(mib), false) => mib.iter().map(|m| m << 20).collect(),
        (None, false) => sizes(opts.quick),
    };
    let opts = &Options { quick: opts.quick || standin, ..opts.clone() };
    eprintln!("cuda-perf: {}, L2 {} MiB, sizes {:?}", gpu.name(), gpu.l2_bytes() >> 20, sizes);
    let max = sizes.iter().copied().max().unwrap_or(0);
    let (src, mut dst) = gpu.memcpy_buffers(max)?;
    let mut entries = Vec::new();
    // the memcpy bandwidth at the largest size: the sparse cases' yardstick
    let mut largest_limit = 0.0;
    for &bytes in &sizes {
        let memcpy_s = {
            let g = &mut gpu;
            for _ in 0..3 {
                g.time_memcpy(&src, &mut dst, bytes)?;
            }
            let runs = if opts.quick { 5 } else { RUNS };
            let t: Vec<f64> = (0..runs).map(|_| g.time_memcpy(&src, &mut dst, bytes)).collect::<BenchResult<_>>()?;
            median(&t).unwrap_or(0.0)
        };
        let limit = crate::timing::gbps(2 * bytes, memcpy_s);
        largest_limit = limit;
        let memcpy_key = format!("memcpy_d2d/u8/{bytes}");
        if opts.selects(&memcpy_key) {
            entries
                .push(Entry { key: memcpy_key, metric: Metric::throughput(2 * bytes, memcpy_s, "memcpy d2d", limit) });
        }
        for case in cuda_set(bytes).into_iter().filter(|c| opts.selects(&c.key()) && (!standin || on_standin(c))) {
            let key = case.key();
            let mut call = crate::ours::prepare_on(&case, DEVICE)?;
            let s = time_median(&mut gpu, opts.quick, &mut call)?;
            drop(call);
            let metric = Metric::throughput(case.bytes(), s, "memcpy d2d", limit);
            eprintln!(
                "  {key:<40} {:>8.1} GB/s  ratio {:.3}",
                crate::timing::gbps(case.bytes(), s),
                metric.ratio().unwrap_or(0.0)
            );
            entries.push(Entry { key, metric });
        }
        for case in super::extra::extra_set(bytes)
            .into_iter()
            .filter(|c| opts.selects(&c.key) && (!standin || extra_on_standin(&c.key)))
        {
            let mut call = case.prepare_on(DEVICE)?;
            let s = time_median(&mut gpu, opts.quick, &mut call)?;
            drop(call);
            let metric = Metric::throughput(case.bytes, s, "memcpy d2d", limit);
            eprintln!(
                "  {:<40} {:>8.1} GB/s  ratio {:.3}",
                case.key,
                crate::timing::gbps(case.bytes, s),
                metric.ratio().unwrap_or(0.0)
            );
            entries.push(Entry { key: case.key, metric });
        }
    }
    // spmv/spmm of a CSR matrix with 2^24 entries (quick and stand-in: 2^20), f32
    for case in crate::sparse::cuda_set(opts.quick).into_iter().filter(|c| opts.selects(&c.key())) {
        let key = case.key();
        let mut call = crate::sparse::prepare_on(&case, DEVICE)?;
        let s = time_median(&mut gpu, opts.quick, &mut call)?;
        drop(call);
        let metric = Metric::throughput(case.bytes(), s, "memcpy d2d", largest_limit);
        eprintln!(
            "  {key:<40} {:>8.1} GB/s  ratio {:.3}",
            crate::timing::gbps(case.bytes(), s),
            metric.ratio().unwrap_or(0.0)
        );
        entries.push(Entry { key, metric });
    }
    let name = gpu.name().to_string();
    let report = Report {
        suite: "cuda-perf".into(),
        machine_key: machine::sanitize(&name),
        machine: name,
        date: machine::today(),
        threads: 0,
        quick: opts.quick,
        stream: Default::default(),
        entries,
    };
    if standin {
        println!("{}", crate::markdown::report(&report, None));
        println!(
            "cuda-perf: stand-in run complete ({} entries); no baseline compared or recorded",
            report.entries.len()
        );
        return Ok(None);
    }
    Ok(Some(report))
}
