//! Runs the generated CUDA C on the CPU: the same kernel source, compiled by the host C++
//! compiler under `kernels/cuda-testing/include/shim.h` into a shared library, launched over its grid and
//! compared with a Rust reference for every layout class x dtype, including tails,
//! misaligned starts, negative strides and broadcast inputs. Skips (with the reason) when
//! g++ or the CUDA fp16/bf16 headers are missing, except under `CI`, where that fails.

#[path = "cuda_shim/harness.rs"]
mod harness;

use std::path::PathBuf;

use harness::*;
use tensor_core::iter::IterPlan;
use tensor_core::with_dtype;
use tensor_core::{DType, Element, Scalar};
use tensor_cuda_testing::samples;
use tensor_cuda_testing::shim::{self, ShimError};
use tensor_kernels_cuda::args::{
    ContigArgs, FusedReduceArgs, KernelParam, ReduceArgs, SparseArgs, StridedArgs32, StridedArgs64, TransposeArgs,
};
use tensor_kernels_cuda::codegen::{self, ArgsKind, Index, KernelSpec, MapLayout};

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn arg_structs_match_the_c_layout() {
    let shim = shim();
    let sizes = [
        (ArgsKind::Contig, std::mem::size_of::<ContigArgs>()),
        (ArgsKind::Strided32, std::mem::size_of::<StridedArgs32>()),
        (ArgsKind::Strided64, std::mem::size_of::<StridedArgs64>()),
        (ArgsKind::Transpose, std::mem::size_of::<TransposeArgs>()),
        (ArgsKind::Reduce, std::mem::size_of::<ReduceArgs>()),
        (ArgsKind::FusedReduce, std::mem::size_of::<FusedReduceArgs>()),
        (ArgsKind::Sparse, std::mem::size_of::<SparseArgs>()),
    ];
    for (kind, rust) in sizes {
        assert_eq!(shim.lib.c_sizeof(kind).unwrap(), rust, "{kind:?}");
    }
}

/// Runs a map kernel of `f` on inputs laid out by `input_strides` (with `lead` elements
/// before the first) into an output of `out_strides`, and checks it against the reference.
#[allow(clippy::too_many_arguments)]
fn check_map(
    shim: &Shim,
    f: &samples::SampleFn,
    layout: MapLayout,
    shape: &[usize],
    out_strides: &[isize],
    input_strides: &[Vec<isize>],
    lead: usize,
    scalar_mask: u32,
) {
    let out_dtype = if f.output == DType::Bool { DType::Bool } else { f.dtype };
    let mut ins: Vec<Operand> = input_strides
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let mut o = Operand::new(f.dtype, shape, st, lead);
            fill_random(&mut o, 7 + i as u64 * 31 + shape.iter().sum::<usize>() as u64, false);
            o
        })
        .collect();
    let mut out = Operand::new(out_dtype, shape, out_strides, lead);
    let mut want = Operand::new(out_dtype, shape, &contiguous_strides(shape), 0);
    let slope = 0.125f32;
    let in_offs: Vec<Vec<isize>> = ins.iter().map(|o| o.offsets()).collect();
    for (k, woff) in want.offsets().into_iter().enumerate() {
        let offs: Vec<isize> = in_offs.iter().map(|v| v[k]).collect();
        reference(f.op, f.dtype, &mut ins, &offs, &mut want, woff, slope);
    }
    let spec = KernelSpec::Map { func: f.func(), inputs: vec![f.dtype; f.arity], out: out_dtype, layout, quant: 0 };
    let g = codegen::generate(&spec).expect("generate");
    let mut ptrs = vec![out.ptr()];
    ptrs.extend(ins.iter_mut().map(Operand::ptr));
    let params: Vec<KernelParam> = vec![Scalar::from(slope).into(); f.nparams];
    let n: usize = shape.iter().product();
    match layout {
        MapLayout::Contiguous => {
            let a = ContigArgs::new(&ptrs, n as u64, scalar_mask, &params, 0).unwrap();
            shim.launch(&g, 3, (64, 1), &a);
        }
        MapLayout::Strided(index) => {
            let mut strides = vec![out_strides.to_vec()];
            strides.extend(input_strides.iter().cloned());
            let plan = plan_of(shape, strides);
            match index {
                Index::I32 => shim.launch(&g, 3, (64, 1), &StridedArgs32::new(&plan, &ptrs, &params, 0).unwrap()),
                Index::I64 => shim.launch(&g, 3, (64, 1), &StridedArgs64::new(&plan, &ptrs, &params, 0).unwrap()),
            }
        }
        MapLayout::Tiled => {
            // `scalar_mask` is the tile mask here: which inputs go through shared memory
            let mut strides = vec![out_strides.to_vec()];
            strides.extend(input_strides.iter().cloned());
            let a = tiled_args(&plan_of(shape, strides), &ptrs, &params, scalar_mask);
            shim.launch(&g, 3, (codegen::TILE, codegen::TILE_ROWS), &a);
        }
    }
    assert_same(&format!("{} {layout:?} {shape:?} lead {lead} mask {scalar_mask}", g.name), &mut out, &mut want);
}

/// The argument block of a tiled launch over a plan of two or three dims (batch, rows,
/// columns), `mask` selecting the inputs staged through shared memory.
fn tiled_args(plan: &IterPlan, ptrs: &[u64], params: &[KernelParam], mask: u32) -> StridedArgs64 {
    assert!((2..=3).contains(&plan.ndim()));
    let mut a = StridedArgs64::new(plan, ptrs, params, u64::from(mask)).unwrap();
    for d in a.ndim as usize..3 {
        a.size[d] = 1;
    }
    a.ndim = 3;
    a
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn map_kernels_match_the_reference_contiguous() {
    let shim = shim();
    for f in sample_fns() {
        for n in [1usize, 37, 1000] {
            for lead in [0, 1] {
                let st = vec![vec![1isize]; f.arity];
                check_map(shim, f, MapLayout::Contiguous, &[n], &[1], &st, lead, 0);
            }
        }
        // the last input is one broadcast element
        if f.arity >= 2 {
            let mut st = vec![vec![1isize]; f.arity];
            st[f.arity - 1] = vec![0];
            check_map(shim, f, MapLayout::Contiguous, &[203], &[1], &st, 0, 1 << (f.arity - 1));
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn map_kernels_match_the_reference_strided() {
    let shim = shim();
    let shape = [3usize, 5, 7];
    let dense = contiguous_strides(&shape);
    for f in sample_fns() {
        for index in [Index::I32, Index::I64] {
            // input 0: flipped (negative strides) and transposed; input 1: broadcast along
            // dim 1; input 2: dense. Output: a transposed (non-dense order) view.
            let mut st = vec![vec![-1isize, 3 * 7, -3], vec![7, 0, 1], dense.clone()];
            st.truncate(f.arity);
            let out_st = [1isize, 3 * 7, 3];
            for lead in [0, 1] {
                check_map(shim, f, MapLayout::Strided(index), &shape, &out_st, &st, lead, 0);
            }
            check_map(shim, f, MapLayout::Strided(index), &[], &[], &vec![vec![]; f.arity], 0, 0);
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn map_kernels_match_the_reference_tiled() {
    let shim = shim();
    for f in sample_fns() {
        // [batch, rows, cols] with partial tiles on both edges; input 0 dense along the rows
        // (a transposed view), input 1 broadcast along the rows, input 2 dense; the output
        // dense. Staging any input is correct (the mask only decides the route).
        let shape = [2usize, 37, 45];
        let dense = contiguous_strides(&shape);
        let mut st = vec![vec![37 * 45, 1, 37], vec![45, 0, 1], dense.clone()];
        st.truncate(f.arity);
        let all = (1u32 << f.arity) - 1;
        for (mask, lead) in [(1u32, 0usize), (all, 1), (0, 0)] {
            check_map(shim, f, MapLayout::Tiled, &shape, &dense, &st, lead, mask);
        }
        // two dims (a batch of one), a flipped transposed input and a strided output
        let shape2 = [33usize, 40];
        let mut st2 = vec![vec![-1isize, 33], vec![40, 1], vec![0, 1]];
        st2.truncate(f.arity);
        check_map(shim, f, MapLayout::Tiled, &shape2, &[80, 2], &st2, 1, 1);
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cast_kernels_follow_rust_as() {
    let shim = shim();
    let shape = [4usize, 33];
    for src in DType::ALL {
        for dst in DType::ALL {
            if src == dst {
                continue;
            }
            for layout in MapLayout::ALL {
                let (src_st, lead) = match layout {
                    MapLayout::Contiguous => (contiguous_strides(&shape), 1),
                    MapLayout::Strided(_) | MapLayout::Tiled => (vec![-1, 4], 0),
                };
                let mut s = Operand::new(src, &shape, &src_st, lead);
                fill_random(&mut s, 99, true);
                let mut out = Operand::new(dst, &shape, &contiguous_strides(&shape), lead);
                let mut want = Operand::new(dst, &shape, &contiguous_strides(&shape), 0);
                for (so, wo) in s.offsets().into_iter().zip(want.offsets()) {
                    with_dtype!(src, S => with_dtype!(dst, D => {
                        let v: D = s.get::<S>(so).cast();
                        want.set(wo, v)
                    }));
                }
                let g = codegen::generate(&KernelSpec::Cast { src, dst, layout }).unwrap();
                let ptrs = [out.ptr(), s.ptr()];
                let plan = plan_of(&shape, vec![contiguous_strides(&shape), src_st.clone()]);
                match layout {
                    MapLayout::Contiguous => {
                        shim.launch(&g, 2, (32, 1), &ContigArgs::new(&ptrs, 132, 0, &[], 0).unwrap())
                    }
                    MapLayout::Strided(Index::I32) => {
                        shim.launch(&g, 2, (32, 1), &StridedArgs32::new(&plan, &ptrs, &[], 0).unwrap())
                    }
                    MapLayout::Strided(Index::I64) => {
                        shim.launch(&g, 2, (32, 1), &StridedArgs64::new(&plan, &ptrs, &[], 0).unwrap())
                    }
                    MapLayout::Tiled => {
                        let a = tiled_args(&plan, &ptrs, &[], 1);
                        shim.launch(&g, 2, (codegen::TILE, codegen::TILE_ROWS), &a)
                    }
                }
                assert_same(&g.name, &mut out, &mut want);
            }
        }
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn copy_fill_and_transpose_kernels_move_the_right_bytes() {
    let shim = shim();
    let dt = |bytes: usize| match bytes {
        1 => DType::U8,
        2 => DType::I16,
        4 => DType::I32,
        _ => DType::I64,
    };
    for bytes in [1usize, 2, 4, 8] {
        let d = dt(bytes);
        let shape = [2usize, 37, 45];
        let dense = contiguous_strides(&shape);
        // strided copy from a flipped, transposed source
        let src_st = vec![-(37 * 45), 1, 37];
        for index in [Index::I32, Index::I64] {
            let mut s = Operand::new(d, &shape, &src_st, 0);
            fill_random(&mut s, 5, false);
            let mut out = Operand::new(d, &shape, &dense, 1);
            let g = codegen::generate(&KernelSpec::Copy { bytes, index }).unwrap();
            let plan = plan_of(&shape, vec![dense.clone(), src_st.clone()]);
            let ptrs = [out.ptr(), s.ptr()];
            match index {
                Index::I32 => shim.launch(&g, 4, (64, 1), &StridedArgs32::new(&plan, &ptrs, &[], 0).unwrap()),
                Index::I64 => shim.launch(&g, 4, (64, 1), &StridedArgs64::new(&plan, &ptrs, &[], 0).unwrap()),
            }
            assert_same(&g.name, &mut out, &mut s);
        }
        // tiled transpose: dst dense along cols, src dense along rows
        {
            let mut s = Operand::new(d, &shape, &src_st, 0);
            fill_random(&mut s, 11, false);
            let mut out = Operand::new(d, &shape, &dense, 1);
            let g = codegen::generate(&KernelSpec::Transpose { bytes, packed: false }).unwrap();
            let a = TransposeArgs {
                dst: out.ptr(),
                src: s.ptr(),
                batch: 2,
                rows: 37,
                cols: 45,
                dst_strides: [dense[0] as i64, dense[1] as i64, dense[2] as i64],
                src_strides: [src_st[0] as i64, src_st[1] as i64, src_st[2] as i64],
            };
            shim.launch(&g, 5, (codegen::TILE, codegen::TILE_ROWS), &a);
            assert_same(&g.name, &mut out, &mut s);
        }
        // word-wise transpose of 1- and 2-byte elements: one partial tile, then several
        // tiles with partial ones at both edges (extents multiples of the word's elements)
        for (rows, cols) in [(68usize, 44usize), (260, 140)] {
            if codegen::packed_elements(bytes).is_none() {
                break;
            }
            let shape = [2usize, rows, cols];
            let dense = contiguous_strides(&shape);
            let src_st = vec![(rows * cols) as isize, 1, rows as isize];
            let mut s = Operand::new(d, &shape, &src_st, 0);
            fill_random(&mut s, 13, false);
            // (word-aligned: the element-wise kernel serves any other start)
            let mut out = Operand::new(d, &shape, &dense, 0);
            let strides = |st: &[isize]| [st[0] as i64, st[1] as i64, st[2] as i64];
            assert!(codegen::packed_fits(bytes, rows, cols, out.ptr(), strides(&dense), s.ptr(), strides(&src_st)));
            let g = codegen::generate(&KernelSpec::Transpose { bytes, packed: true }).unwrap();
            let a = TransposeArgs {
                dst: out.ptr(),
                src: s.ptr(),
                batch: 2,
                rows: rows as i64,
                cols: cols as i64,
                dst_strides: strides(&dense),
                src_strides: strides(&src_st),
            };
            // fewer blocks than tiles: blocks loop over tiles
            shim.launch(&g, 3, (codegen::TILE, codegen::TILE_ROWS), &a);
            assert_same(&g.name, &mut out, &mut s);
        }
        // fill, every layout class it has (a fill has no input to tile), with a tail and a
        // misaligned start
        for layout in MapLayout::ALL.into_iter().filter(|&l| l != MapLayout::Tiled) {
            let st = match layout {
                MapLayout::Contiguous => vec![45isize * 37, 45, 1],
                _ => vec![1, -2, 2 * 37],
            };
            let mut out = Operand::new(d, &shape, &st, 1);
            let bits: u64 = 0x0123_4567_89ab_cdef & (u64::MAX >> (64 - 8 * bytes));
            let g = codegen::generate(&KernelSpec::Fill { bytes, layout }).unwrap();
            let ptrs = [out.ptr()];
            let plan = plan_of(&shape, vec![st.clone()]);
            match layout {
                MapLayout::Contiguous => {
                    shim.launch(&g, 3, (64, 1), &ContigArgs::new(&ptrs, 2 * 37 * 45, 0, &[], bits).unwrap())
                }
                MapLayout::Strided(Index::I32) => {
                    shim.launch(&g, 3, (64, 1), &StridedArgs32::new(&plan, &ptrs, &[], bits).unwrap())
                }
                MapLayout::Strided(Index::I64) | MapLayout::Tiled => {
                    shim.launch(&g, 3, (64, 1), &StridedArgs64::new(&plan, &ptrs, &[], bits).unwrap())
                }
            }
            for off in out.offsets() {
                let got = with_dtype!(d, T => { let v: T = out.get(off); v.cast::<i64>() });
                let want = with_dtype!(d, T => { let v: T = (bits as i64).cast(); v.cast::<i64>() });
                assert_eq!(got, want, "{} at {off}", g.name);
            }
        }
    }
}

/// A device function taking one param of each type a `#[tensor_op]` may declare.
const PROBE: &str = "__device__ __forceinline__ long long tensor_op_probe_i64(long long x, long long k, double s, \
    float f, bool b) {\n    return b ? tops_add(x, k) : tops_add(tops_cast<long long>(s * 1e17), tops_cast<long long>(f));\n}\n";
const PROBE_F64: &str =
    "__device__ __forceinline__ double tensor_op_probe_f64(double x, double s, float f, long long k) \
    {\n    return tops_add(tops_mul(x, s), tops_add(tops_cast<double>(f), tops_cast<double>(k)));\n}\n";

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn params_reach_device_functions_exactly_in_their_declared_types() {
    use tensor_kernels_cuda::codegen::DeviceFn;
    let fi =
        DeviceFn { name: "tensor_op_probe_i64", source: PROBE, compute: DType::I64, output: DType::I64, nparams: 4 };
    let ff = DeviceFn {
        name: "tensor_op_probe_f64",
        source: PROBE_F64,
        compute: DType::F64,
        output: DType::F64,
        nparams: 3,
    };
    let spec = |func, d| KernelSpec::Map { func, inputs: vec![d], out: d, layout: MapLayout::Contiguous, quant: 0 };
    let (si, sf) = (spec(fi, DType::I64), spec(ff, DType::F64));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    let lib = match shim::build(&[si.clone(), sf.clone()], &dir) {
        Ok(lib) => lib,
        Err(ShimError::Failed(e)) => panic!("{e}"),
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    };
    let run = |spec: &KernelSpec<'_>, x: &mut [u64], out: &mut [u64], params: &[Scalar]| {
        let g = codegen::generate(spec).unwrap();
        let params: Vec<KernelParam> = params.iter().map(|&p| p.into()).collect();
        let a =
            ContigArgs::new(&[out.as_mut_ptr() as u64, x.as_mut_ptr() as u64], x.len() as u64, 0, &params, 0).unwrap();
        // SAFETY: `a` is the struct the kernel takes; both pointers address `x.len()` 8-byte elements.
        unsafe { lib.launch(&g.name, 2, (64, 1), &a as *const ContigArgs as *const std::ffi::c_void) }.unwrap();
    };
    // i64 params beyond 2^24 and 2^53 (a float or double would round them), both signs
    let xs: Vec<i64> = vec![0, 1, -1, i64::MIN, i64::MAX, 40];
    for k in [16_777_217i64, (1 << 53) + 1, -(1 << 62) - 3, i64::MAX, i64::MIN] {
        let mut x: Vec<u64> = xs.iter().map(|&v| v as u64).collect();
        let mut out = vec![0u64; x.len()];
        run(&si, &mut x, &mut out, &[Scalar::Int(k), Scalar::Float(0.0), Scalar::from(0.0f32), Scalar::Bool(true)]);
        let want: Vec<u64> = xs.iter().map(|&v| v.wrapping_add(k) as u64).collect();
        assert_eq!(out, want, "i64 param {k}");
    }
    // bool false picks the other arm: f64 and f32 params converted to i64 with `as` rules
    let mut x = vec![0u64; 3];
    let mut out = vec![0u64; 3];
    run(
        &si,
        &mut x,
        &mut out,
        &[Scalar::Int(1), Scalar::Float(0.1), Scalar::from(16_777_216.0f32), Scalar::Bool(false)],
    );
    assert_eq!(out, vec![(0.1f64 * 1e17) as i64 as u64 + 16_777_216; 3]);
    // f64 and f32 params exactly: x * 0.1 in f64, plus an f32 that is not an f64 literal
    let xs = [1.0f64, 3.0, 7.0, -0.3, 1e300, 123456.789];
    let f = 0.1f32;
    let mut x: Vec<u64> = xs.iter().map(|v| v.to_bits()).collect();
    let mut out = vec![0u64; x.len()];
    run(&sf, &mut x, &mut out, &[Scalar::Float(0.1), Scalar::from(f), Scalar::Int((1 << 53) + 1)]);
    for (i, &v) in xs.iter().enumerate() {
        let want = v * 0.1 + (f as f64 + ((1i64 << 53) + 1) as f64);
        assert_eq!(out[i], want.to_bits(), "f64 params on {v}: got {}, want {want}", f64::from_bits(out[i]));
    }
    // mismatched kinds convert with `as` rules, like `Scalar::to` on the CPU
    let mut x = vec![0u64; 2];
    let mut out = vec![0u64; 2];
    run(&si, &mut x, &mut out, &[Scalar::Float(-2.75e30), Scalar::Int(0), Scalar::Int(0), Scalar::Int(3)]);
    assert_eq!(out, vec![Scalar::Float(-2.75e30).to::<i64>() as u64; 2]);
}
