//! Every `Device::Cuda` path end to end — context and stream setup, the stream-ordered
//! caching allocator, host↔device and device↔device copies, the module cache, argument
//! marshalling into `cuLaunchKernel`, error handling — compared with the CPU results.
//!
//! On a machine with a CUDA driver these run on its device. Everywhere else (CI) they run
//! under the CPU-backed stand-in of the driver and NVRTC (`kernels/cuda-testing/standin/`, see the
//! runner in `standin/mod.rs`), which also checks what a real driver would reject and a CPU
//! would not notice, and injects faults: the `standin_only` tests (`cuda_device/standin_checks.rs`)
//! show each check firing, and that every injected failure is an `Err` value that leaks nothing.

#[path = "cuda_sparse/cases.rs"]
mod cases;
mod chains;
mod common;
#[path = "reduce/cuda_rows.rs"]
mod cuda_rows;
#[path = "cuda_device/f8.rs"]
mod f8;
#[path = "cuda_device/fused.rs"]
mod fused;
#[path = "cuda_device/layouts.rs"]
mod layouts;
#[path = "cuda_device/quantized.rs"]
mod quantized;
#[path = "cuda_device/reduce_shapes.rs"]
mod reduce_shapes;
#[path = "cuda_device/sparse.rs"]
mod sparse;
#[path = "cuda_device/sparse_mm.rs"]
mod sparse_mm;
#[path = "cuda_device/sparse_ops.rs"]
mod sparse_ops;
mod standin;
#[path = "cuda_device/standin_checks.rs"]
mod standin_checks;
mod user_reduce;

use std::process::ExitCode;

use chains::{case, eager_and_fused, fused_expr, leaf_tensors};
use common::{assert_close, gen_values, input, make, params_for, poison, values, Lay};
use cuda_rows::{close, cpu_result, order_free, reduce_rows, scale_of, Case, SHAPES};
use f8::*;
use fused::*;
use layouts::*;
use proptest::strategy::{Strategy, ValueTree};
use quantized::*;
use reduce_shapes::*;
use sparse::*;
use sparse_mm::*;
use sparse_ops::*;
use standin::{control, Test};
use standin_checks::*;
use tensor_core::registry::OpSpec;
use tensor_kernels_cuda::alloc::{self, CudaAllocator};
use tensor_kernels_cuda::kernel::CudaMapKernel;
use tensor_kernels_cuda::kernel::CudaReduceKernel;
use tensor_kernels_cuda::runtime::{self, CudaDevice};
use tensor_ops::by_spec::{call_map_inplace, call_map_new, call_map_out};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

const DEV: Device = Device::Cuda(0);

macro_rules! tests {
    ($($name:ident $(: $($flag:ident),*)?;)*) => {
        vec![$(Test {
            name: stringify!($name),
            run: $name,
            standin_only: false $($(|| stringify!($flag) == "standin_only")*)?,
            serial: false $($(|| stringify!($flag) == "serial")*)?,
        }),*]
    };
}

fn main() -> ExitCode {
    standin::main(tests![
        init_finds_the_device;
        threads_building_one_new_kernel_at_once_all_load;
        ops_match_the_cpu_for_every_op_and_dtype;
        round_trips_copies_transposes_casts_and_fills;
        empty_tensors_cross_devices_and_run_every_op;
        reductions_match_the_cpu_for_every_op_and_dtype;
        non_finite_values_reduce_as_numpy_has_them;
        fused_softmax_rows_match_the_cpu;
        dense_maps_of_every_length_match_the_cpu;
        maps_with_transposed_operands_match_the_cpu;
        narrow_transposed_copies_match_the_cpu;
        small_extent_reductions_match_the_cpu;
        one_long_row_reduces_like_the_cpu;
        arg_reductions_keep_the_first_index_either_way;
        fused_chains_match_the_cpu;
        f8_casts_and_maps_match_the_cpu_bit_for_bit;
        quantized_tensors_match_the_cpu_bit_for_bit;
        sparse_conversions_match_the_cpu_for_every_dtype;
        sparse_steps_with_bad_indices_are_errors_on_the_device;
        sparse_binary_ops_match_the_cpu;
        sparse_amax_amin_match_the_cpu;
        sparse_softmax_matches_the_cpu;
        batched_csr_ops_match_the_cpu;
        sparse_products_match_the_cpu;
        sparse_products_refuse_what_the_cpu_refuses;
        fused_chains_equal_the_eager_device_chain_bit_for_bit;
        fused_chains_with_numbers_equal_the_eager_device_chain;
        allocator_round_trip;
        two_devices_and_copies_between_them: standin_only;
        an_argument_block_of_the_wrong_size_is_rejected: standin_only, serial;
        grids_blocks_and_shared_memory_over_the_limits_are_rejected: standin_only, serial;
        a_pointer_that_is_not_a_live_allocation_is_rejected: standin_only, serial;
        a_copy_past_an_allocation_end_is_rejected: standin_only, serial;
        freeing_a_block_a_stream_still_uses_is_rejected: standin_only, serial;
        another_devices_memory_in_a_launch_is_rejected: standin_only, serial;
        failed_allocations_are_errors_and_leak_nothing: standin_only, serial;
        failed_launches_are_errors_and_leak_nothing: standin_only, serial;
        failed_copies_are_errors_and_leak_nothing: standin_only, serial;
    ])
}

/// Tensors with no element move both ways and through every kind of call on the device
/// (issue 32: `to_device` of an empty tensor was `DeviceMismatch`).
fn empty_tensors_cross_devices_and_run_every_op() {
    for d in DType::ALL {
        for shape in [&[0usize][..], &[3, 0], &[0, 5, 2]] {
            let host = Tensor::zeros(shape, d, Device::Cpu).unwrap();
            let g = host.to_device(DEV).unwrap();
            assert_eq!((g.device(), g.shape(), g.dtype()), (DEV, shape, d));
            let back = g.to_device(Device::Cpu).unwrap();
            assert_eq!((back.device(), back.shape()), (Device::Cpu, shape));
            assert!(values(&back).is_empty());
            // copy_ both ways, a cast, a map, a fill and a reduction over the empty tensor
            g.copy_(&host).unwrap();
            host.copy_(&g).unwrap();
            assert_eq!(g.to_dtype(DType::F32).unwrap().shape(), shape);
            g.fill_(1).unwrap();
            assert_eq!(g.add(&g).unwrap().shape(), shape);
            let s = g.sum_all().unwrap().to_device(Device::Cpu).unwrap();
            assert_eq!(s.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(), vec![0.0], "{d} {shape:?}");
        }
    }
    // Non-empty results of empty extents come back too.
    let g = Tensor::zeros(&[4, 0], DType::F32, Device::Cpu).unwrap().to_device(DEV).unwrap();
    let rows = g.sum(&[1], false).unwrap().to_device(Device::Cpu).unwrap();
    assert_eq!(rows.to_vec::<f32>().unwrap(), vec![0.0; 4]);
}

/// A device copy of `t` with `t`'s strides and relative storage offset.
fn device_view(t: &Tensor, dev: Device) -> Tensor {
    let Some((lo, hi)) = t.storage_span() else {
        return Tensor::empty(t.shape(), t.dtype(), dev).unwrap(); // no elements
    };
    let flat = t.as_strided(&[hi - lo + 1], &[1], lo).unwrap();
    flat.to_device(dev).unwrap().as_strided(t.shape(), t.strides(), t.storage_offset() - lo).unwrap()
}

fn device() -> std::sync::Arc<CudaDevice> {
    runtime::device(0).unwrap_or_else(|e| panic!("cuda:0: {e}"))
}

fn init_finds_the_device() {
    let info = runtime::init().unwrap_or_else(|e| panic!("{e}"));
    assert!(info.devices >= 1);
    let dev = device();
    println!("{dev:?}: {} SMs, NVRTC {:?}", dev.sm_count, info.nvrtc);
    if control().is_some() {
        assert!(dev.name.contains("stand-in"), "{}", dev.name);
    }
}

/// Eight threads compile and load the same never-seen kernel at once, four times: each gets
/// a complete module (the compile caches — ours, and the stand-in's library cache — are
/// written by several threads of one process at once; a half-written entry must never be
/// read).
fn threads_building_one_new_kernel_at_once_all_load() {
    // A few rounds: the race this guards against needs two builds' link steps to overlap.
    for _round in 0..4 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let source = format!(
            "// a program no cache holds: {nanos}\n\
         struct one_block {{ float* out; const float* in; float* work; }};\n\
         extern \"C\" __global__ void fresh_{nanos}(one_block a) {{ a.out[0] = 1.0f; }}\n"
        );
        let name = format!("fresh_{nanos}");
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            let loads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        device().compile_and_load(&source, &name)
                    })
                })
                .collect();
            for load in loads {
                if let Err(e) = load.join().expect("the thread ran") {
                    panic!("a thread's build of {name} did not load: {e}");
                }
            }
        });
    }
}

/// Every CUDA elementwise row (op × dtype) on contiguous, misaligned, transposed with a
/// broadcast row, and 0-dim scalar inputs into `_out` tensors (the layout classes of the
/// contiguous and 32-bit strided kernels; the 64-bit ones need > 2^31 elements and are run
/// on the shim in `cuda_kernels.rs`), and as a new tensor and in place.
fn ops_match_the_cpu_for_every_op_and_dtype() {
    let rows = common::cuda_rows_of::<CudaMapKernel>();
    assert!(rows.len() > 100, "{} CUDA map rows", rows.len());
    // most of the time goes into building each kernel at its first launch
    let parts = standin::cores();
    std::thread::scope(|s| {
        for part in 0..parts {
            let rows = &rows;
            s.spawn(move || {
                rows.iter().skip(part).step_by(parts).for_each(|&(spec, d, _)| op_matches_the_cpu(spec, d))
            });
        }
    });
}

fn op_matches_the_cpu(spec: &'static OpSpec, d: DType) {
    let shape = [7usize, 300];
    let params = params_for(spec);
    let out_dtype = if spec.bool_output { DType::Bool } else { d };
    // (layout, the last input's shape when the op has two or more inputs): dense; misaligned;
    // strided with a row broadcast along the first dim; dense with a 0-dim scalar
    let row: &[usize] = &shape[1..];
    for (lay, last) in
        [(Lay::Contiguous, None), (Lay::Offset, None), (Lay::Transposed, Some(row)), (Lay::Contiguous, Some(&[][..]))]
    {
        if last.is_some_and(|l| l.is_empty()) && spec.arity < 2 {
            continue;
        }
        let what = format!("{} {d} {lay:?} last input {last:?}", spec.name);
        let cpu: Vec<Tensor> = (0..spec.arity)
            .map(|i| {
                let s: &[usize] = match last {
                    Some(l) if i > 0 && i == spec.arity - 1 => l,
                    _ => &shape,
                };
                input(d, s, lay, i as u64 + 1)
            })
            .collect();
        let gpu_in: Vec<Tensor> = cpu.iter().map(|t| device_view(t, DEV)).collect();
        let cpu_refs: Vec<&Tensor> = cpu.iter().collect();
        let gpu_refs: Vec<&Tensor> = gpu_in.iter().collect();
        let want = common::empty_on(&shape, out_dtype, Device::Cpu).unwrap();
        call_map_out(spec, &cpu_refs, &params, &want).unwrap();
        let got = common::zeros_on(&shape, out_dtype, DEV).unwrap();
        call_map_out(spec, &gpu_refs, &params, &got).unwrap_or_else(|e| panic!("{what} _out: {e}"));
        assert_close(&values(&got), &values(&want), out_dtype, false, &format!("{what} _out"));
        if lay != Lay::Contiguous || last.is_some() {
            continue;
        }
        let new = call_map_new(spec, &gpu_refs, &params).unwrap_or_else(|e| panic!("{what} new: {e}"));
        assert_eq!(new.device(), DEV);
        let want_new = call_map_new(spec, &cpu_refs, &params).unwrap();
        assert_close(&values(&new), &values(&want_new), want_new.dtype(), false, &format!("{what} new"));
        if !spec.bool_output && want_new.dtype() == d {
            call_map_inplace(spec, &gpu_refs, &params).unwrap_or_else(|e| panic!("{what} in place: {e}"));
            assert_close(&values(&gpu_in[0]), &values(&want_new), d, false, &format!("{what} in place"));
        }
    }
}

fn round_trips_copies_transposes_casts_and_fills() {
    for d in DType::ALL {
        let shape = [3usize, 70, 45];
        let t = input(d, &shape, Lay::Contiguous, 2);
        let g = t.to_device(DEV).unwrap();
        assert_eq!(g.device(), DEV);
        assert_close(&values(&g), &values(&t), d, true, &format!("{d} round trip"));
        for perm in [[0usize, 2, 1], [2, 1, 0], [1, 0, 2]] {
            let c = g.permute(&perm).unwrap().contiguous().unwrap();
            let want = t.permute(&perm).unwrap().contiguous().unwrap();
            assert_close(&values(&c), &values(&want), d, true, &format!("{d} permute {perm:?}"));
        }
        // copy_ across devices into strided destinations, both ways, and on the device
        let dst = Tensor::zeros(&[45, 70], d, Device::Cpu).unwrap().to_device(DEV).unwrap().t().unwrap();
        let src = input(d, &[70, 45], Lay::Flipped, 4);
        dst.copy_(&src).unwrap();
        assert_close(&values(&dst), &values(&src), d, true, &format!("{d} copy_ host -> device"));
        let host = Tensor::zeros(&[70, 45], d, Device::Cpu).unwrap();
        host.copy_(&dst).unwrap();
        assert_close(&values(&host), &values(&src), d, true, &format!("{d} copy_ device -> host"));
        let on_dev = Tensor::zeros(&[70, 45], d, DEV).unwrap();
        on_dev.copy_(&dst).unwrap();
        assert_close(&values(&on_dev), &values(&src), d, true, &format!("{d} copy_ device -> device"));
        for to in DType::ALL {
            let c = g.to_dtype(to).unwrap();
            assert_close(&values(&c), &values(&t.to_dtype(to).unwrap()), to, true, &format!("{d} -> {to}"));
        }
        let f = Tensor::empty(&shape, d, DEV).unwrap();
        f.fill_(2).unwrap();
        f.select(1, 3).unwrap().fill_(1).unwrap();
        let want = Tensor::full(&shape, 2, d, Device::Cpu).unwrap();
        want.select(1, 3).unwrap().fill_(1).unwrap();
        assert_close(&values(&f), &values(&want), d, true, &format!("{d} fill"));
    }
}

/// Every CUDA reduction row through the public API on the device — new results and `_out`
/// into a poisoned tensor — and softmax, including a split 2^22-element extent.
fn reductions_match_the_cpu_for_every_op_and_dtype() {
    let rows = reduce_rows();
    // most of the time goes into building each kernel at its first launch
    let parts = standin::cores();
    std::thread::scope(|s| {
        for part in 0..parts {
            let rows = &rows;
            s.spawn(move || {
                rows.iter()
                    .skip(part)
                    .step_by(parts)
                    .for_each(|&(op, dtype, k)| reduction_matches_the_cpu(op, dtype, k))
            });
        }
    });
    let big = Tensor::from_vec((0..1u32 << 22).map(|i| (i % 1000) as f32 * 1e-3).collect(), &[1 << 22]).unwrap();
    let want = big.sum_all().unwrap().to_vec::<f32>().unwrap()[0];
    let got = big.to_device(DEV).unwrap().sum_all().unwrap().to_vec::<f32>().unwrap()[0];
    assert!((got - want).abs() <= 1e-5 * want.abs(), "sum of 2^22: device {got}, cpu {want}");
    let x = make(&gen_values(DType::F32, 6 * 37, 9), &[6, 37], DType::F32, Lay::Transposed);
    let want = x.softmax(1).unwrap().to_vec::<f32>().unwrap();
    let got = device_view(&x, DEV).softmax(1).unwrap().to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(g == w || (g - w).abs() <= 1e-6 * w.abs().max(1e-3) || g.is_nan() && w.is_nan(), "softmax: {g} vs {w}");
    }
}

/// Non-finite values as numpy has them: +∞ in an extent makes every softmax / log_softmax
/// output of it NaN (along the last dim and down a strided one); a one-element NaN or ∞
/// column has a NaN variance.
fn non_finite_values_reduce_as_numpy_has_them() {
    let inf = Tensor::from_vec(vec![1.0f32, f32::INFINITY, 0.5, 2.0, 1.0, 3.0], &[2, 3]).unwrap();
    for (t, dim) in [(inf.clone(), 1), (inf.t().unwrap(), 0)] {
        for log in [false, true] {
            let run = |x: &Tensor| if log { x.log_softmax(dim) } else { x.softmax(dim) }.unwrap();
            let (got, want) = (run(&device_view(&t, DEV)), run(&t));
            let extent = |y: &Tensor, k: usize| y.select(1 - dim, k).unwrap().to_vec::<f32>().unwrap();
            let with_inf = extent(&got, 0);
            assert!(with_inf.iter().all(|g| g.is_nan()), "log={log} dim {dim}: {with_inf:?}");
            for (g, w) in extent(&got, 1).iter().zip(&extent(&want, 1)) {
                assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "log={log} dim {dim}: {g} vs {w}");
            }
        }
    }
    let col = device_view(&Tensor::from_vec(vec![f32::NAN, f32::INFINITY, 2.0], &[1, 3]).unwrap(), DEV);
    let v = col.var(&[0], 0, false).unwrap().to_vec::<f32>().unwrap();
    assert!(v[0].is_nan() && v[1].is_nan() && v[2] == 0.0, "var of one-element columns: {v:?}");
}

/// softmax / log_softmax along the last dim of a dense float tensor run as the fused
/// rows kernel on the device (a block per row; an unregistered row would be an error, not a
/// fallback) — new results, `_out` into a poisoned tensor, and in place — against the CPU:
/// rows of one element, under a warp, over a block, long rows, more rows than a launch has
/// blocks, and rows holding NaN, +∞ or only −∞ (all NaN); rows over the fused kernel's
/// `MAX_ROW` take the split reduction and the map instead, with the same results.
fn fused_softmax_rows_match_the_cpu() {
    let over = tensor_kernels_cuda::softmax_rows::MAX_ROW + 3;
    // f16/bf16 run the same template in f32 (the shim test takes every shape for them):
    // two shapes here, each kernel compiled by the stand-in costing seconds. Rows of 40 000
    // take the streaming form (too long for registers), rows past MAX_ROW the reduction.
    let all = [(3, 1), (7, 37), (4, 300), (2, 3000), (5000, 3), (3, 40_000), (4, over)];
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let shapes = if dtype.size() == 2 { &all[1..3] } else { &all[..] };
        for &(rows, n) in shapes {
            let mut v: Vec<f64> = (0..rows * n).map(|i| ((i * 7919 + 3) % 2001) as f64 / 100.0 - 10.0).collect();
            if rows >= 4 && n >= 2 {
                v[0] = f64::NAN;
                v[n] = f64::INFINITY;
                v[2 * n..3 * n].fill(f64::NEG_INFINITY);
            }
            let x = Tensor::from_vec(v, &[rows, n]).unwrap().to_dtype(dtype).unwrap();
            for log in [false, true] {
                let what = format!("{} {dtype} [{rows}, {n}]", if log { "log_softmax" } else { "softmax" });
                let new = |t: &Tensor| if log { t.log_softmax(1) } else { t.softmax(1) }.unwrap();
                let into = |t: &Tensor, out: &Tensor| {
                    if log { tensor_ops::log_softmax_out(t, 1, out) } else { tensor_ops::softmax_out(t, 1, out) }
                        .unwrap()
                };
                let want = values(&new(&x));
                let dx = x.to_device(DEV).unwrap();
                assert_close(&values(&new(&dx)), &want, dtype, false, &what);
                let out = Tensor::empty(&[rows, n], dtype, DEV).unwrap();
                poison(&out);
                into(&dx, &out);
                assert_close(&values(&out), &want, dtype, false, &format!("{what} into a poisoned out"));
                into(&dx, &dx);
                assert_close(&values(&dx), &want, dtype, false, &format!("{what} in place"));
            }
        }
    }
}

fn reduction_matches_the_cpu(op: &'static OpSpec, dtype: DType, k: &CudaReduceKernel) {
    if op.name == "softmax" {
        return; // its pass is checked through softmax
    }
    let name = op.name;
    for (i, &(shape, lay, dims, keepdim, _)) in SHAPES.iter().enumerate() {
        let arg = matches!(name, "argmax" | "argmin" | "my_argmax");
        let dims_only = matches!(name, "all" | "any" | "var" | "std" | "welford_var" | "my_argmax");
        if arg && dims.is_none_or(|d| d.len() != 1) || dims_only && dims.is_none() {
            continue;
        }
        let n: usize = shape.iter().product();
        if n == 0 && matches!(name, "amax" | "amin" | "argmax" | "argmin" | "my_argmax") {
            continue;
        }
        let vals = cuda_rows::no_nan_for_users(name, gen_values(dtype, n, 3 + i as u64));
        let input = make(&vals, shape, dtype, lay);
        let want = cpu_result(name, &input, dims, keepdim);
        let got = cpu_result(name, &device_view(&input, DEV), dims, keepdim);
        assert_eq!(got.device(), DEV, "{name}");
        let case = Case {
            what: format!("{name} {dtype} {shape:?} {lay:?} dims {dims:?}"),
            name,
            steps: Vec::new(),
            got: got.to_device(Device::Cpu).unwrap(),
            scale: scale_of(&input),
            want,
            _input: input,
            _work: Vec::new(),
            order_free: order_free(name, dtype),
            compute: k.compute,
        };
        close(&case);
    }
    if name == "sum" {
        // _out into a poisoned device tensor
        let x = input(dtype, &[6, 37], Lay::Transposed, 8);
        let want = tensor_ops::sum(&x, &[1], false).unwrap();
        let out = Tensor::empty(want.shape(), want.dtype(), DEV).unwrap();
        poison(&out);
        tensor_ops::sum_out(&device_view(&x, DEV), &[1], false, &out).unwrap();
        assert_close(&values(&out), &values(&want), want.dtype(), false, &format!("sum_out {dtype}"));
    }
}

fn allocator_round_trip() {
    let block = CudaAllocator::allocate_on(0, 1000).unwrap();
    assert_eq!(block.len(), 1000);
    let src: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    let mut back = vec![0u8; 1000];
    let dev = device();
    // SAFETY: the block holds 1000 bytes on cuda:0 and nothing else uses it.
    unsafe {
        dev.copy_from_host(&src, block.as_ptr() as u64).unwrap();
        dev.copy_to_host(block.as_ptr() as u64, &mut back).unwrap();
    }
    assert_eq!(src, back);
    // (other tests allocate concurrently: reuse of this very block is checked serially in
    // the fault-injection tests' accounting)
    drop(block);
    let again = CudaAllocator::allocate_on(0, 900).unwrap();
    assert_eq!(again.len(), 900);
}

/// Ops on `cuda:1`, copies between the two devices (both ways, strided), and an op mixing
/// them is an error value. (Stand-in only: it simulates two devices; a one-GPU machine has
/// no `cuda:1`.)
fn two_devices_and_copies_between_them() {
    let one = Device::Cuda(1);
    let x = input(DType::F32, &[20, 30], Lay::Transposed, 5);
    let a = x.to_device(one).unwrap();
    assert_eq!(a.device(), one);
    let b = a.add(&a).unwrap().exp().unwrap();
    assert_eq!(b.device(), one);
    let want = x.add(&x).unwrap().exp().unwrap();
    assert_close(&values(&b), &values(&want), DType::F32, false, "ops on cuda:1");
    let c = b.to_device(DEV).unwrap();
    assert_close(&values(&c), &values(&b), DType::F32, true, "cuda:1 -> cuda:0");
    let d = Tensor::zeros(&[30, 20], DType::F64, DEV).unwrap().t().unwrap();
    d.copy_(&b).unwrap();
    assert_close(&values(&d), &values(&b), DType::F64, true, "copy_ cuda:1 -> cuda:0");
    let back = Tensor::zeros(&[20, 30], DType::F32, one).unwrap();
    back.copy_(&d).unwrap();
    assert_close(&values(&back), &values(&b), DType::F32, true, "copy_ cuda:0 -> cuda:1");
    let e = a.add(&c).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    assert!(alloc::memory_stats(1).unwrap().allocated > 0);
}
