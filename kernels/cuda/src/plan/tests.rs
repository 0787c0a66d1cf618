//! The launch plans' unit tests: layout classes, splits, transposes and widened indices.

use super::*;
use tensor_core::Device;

fn raw<'a>(ptr: usize, dtype: DType, shape: &'a [usize], strides: &'a [isize]) -> RawTensor<'a> {
    RawTensor { ptr: ptr as *mut u8, dtype, shape, strides, device: Device::Cuda(0) }
}

fn kernels(steps: &[Step]) -> Vec<&Launch> {
    steps.iter().filter_map(|s| if let Step::Kernel(l) = s { Some(l) } else { None }).collect()
}

#[test]
fn casts_of_transposed_sources_use_the_tiled_map() {
    // a [64, 48] f32 result from an f16 source dense along the rows
    let (shape, dst, src) = ([64usize, 48], [48isize, 1], [1isize, 64]);
    let steps = plan_copy(&raw(0, DType::F32, &shape, &dst), &raw(1 << 20, DType::F16, &shape, &src), 64).unwrap();
    let ks = kernels(&steps);
    assert_eq!(ks.len(), 1);
    assert!(matches!(ks[0].spec, KernelSpec::Cast { layout: MapLayout::Tiled, .. }), "{:?}", ks[0].spec);
    assert_eq!(ks[0].block, (TILE, TILE_ROWS));
    let Args::Strided64(a) = ks[0].args else { panic!("{:?}", ks[0].args) };
    // columns, rows, a batch of one; the source staged (mask bit 0)
    assert_eq!((a.ndim, a.size[..3].to_vec(), a.bits), (3, vec![48, 64, 1], 1));
    assert_eq!((a.stride[0][..3].to_vec(), a.stride[1][..3].to_vec()), (vec![1, 48, 0], vec![64, 1, 0]));
    assert_eq!(ks[0].grid, 2 * 2);
    // too narrow to tile: the strided kernel
    let (shape, dst, src) = ([64usize, 8], [8isize, 1], [1isize, 64]);
    let steps = plan_copy(&raw(0, DType::F32, &shape, &dst), &raw(1 << 20, DType::F16, &shape, &src), 64).unwrap();
    assert!(matches!(kernels(&steps)[0].spec, KernelSpec::Cast { layout: MapLayout::Strided(Index::I32), .. }));
}

#[test]
fn contiguous_grids_give_each_thread_the_kernels_vectors_and_every_block_work() {
    // 2^28 f32: 2^26 vectors, 4 a thread of 256-thread blocks, one pass
    assert_eq!(contiguous_grid(1 << 28, &[4, 4, 4]), 1 << 16);
    assert_eq!(contiguous_grid(1 << 22, &[4, 4]), 1024);
    assert_eq!(contiguous_grid(1 << 16, &[4, 4]), 16);
    assert_eq!(contiguous_grid(1000, &[4, 4]), 1);
    // u8 moves 16 elements a vector, one vector a thread; f16 two
    assert_eq!(contiguous_grid(1 << 20, &[1, 1]), 256);
    assert_eq!(contiguous_grid(1 << 30, &[2, 2]), 1 << 18);
    assert_eq!(contiguous_grid(1, &[8]), 1);
    for n in [1usize, 255, 4096, 1 << 20, (1 << 24) + 3] {
        for sizes in [[4usize, 4], [1, 1], [2, 4], [8, 8]] {
            let grid = contiguous_grid(n, &sizes) as usize;
            let vec = 16 / sizes.iter().max().unwrap();
            let per_block = BLOCK as usize * crate::codegen::contig_unroll(vec) as usize;
            let nvec = n.div_ceil(vec);
            // every vector has a thread, every block a vector
            assert!(grid * per_block >= nvec && (grid - 1) * per_block < nvec.max(1), "{n} {sizes:?}");
        }
    }
}

#[test]
fn dense_same_dtype_copy_is_a_memcpy() {
    let (shape, st) = ([4usize, 5], [5isize, 1]);
    let steps = plan_copy(&raw(4096, DType::F32, &shape, &st), &raw(8192, DType::F32, &shape, &st), 64).unwrap();
    assert!(matches!(steps.as_slice(), [Step::Memcpy { dst: 4096, src: 8192, bytes: 80 }]));
}

#[test]
fn transposes_use_the_tiled_kernel_with_host_batch_loops() {
    let shape = [3usize, 2, 64, 48];
    let dst = [2 * 64 * 48, 64 * 48, 48, 1];
    let src = [2 * 64 * 48, 64 * 48, 1, 64]; // last two dims swapped
    let steps = plan_copy(&raw(0, DType::I16, &shape, &dst), &raw(1 << 20, DType::I16, &shape, &src), 64).unwrap();
    // [3, 2] coalesce into one batch dim of 6
    let ks = kernels(&steps);
    assert_eq!(ks.len(), 1);
    let Args::Transpose(a) = ks[0].args else { panic!("{:?}", ks[0].args) };
    assert_eq!((a.batch, a.rows, a.cols), (6, 64, 48));
    // a batch that cannot coalesce: one launch per outer index
    let src2 = [64 * 48, 3 * 64 * 48, 1, 64];
    let steps = plan_copy(&raw(0, DType::I16, &shape, &dst), &raw(1 << 20, DType::I16, &shape, &src2), 64).unwrap();
    let ks = kernels(&steps);
    assert_eq!(ks.len(), 3);
    assert!(ks.iter().all(|k| matches!(k.spec, KernelSpec::Transpose { bytes: 2, .. })));
}

#[test]
fn narrow_transposes_move_words_where_extents_strides_and_addresses_allow() {
    let spec = |steps: &[Step]| match kernels(steps)[..] {
        [k] => (k.spec.clone(), k.grid),
        ref ks => panic!("{} launches", ks.len()),
    };
    let shape = [256usize, 96];
    let dst = [96isize, 1];
    let src = [1isize, 256];
    // u8: words of 4 elements, 128x128-element tiles (2 x 1 of them); many blocks allowed
    let steps = plan_copy(&raw(0, DType::U8, &shape, &dst), &raw(1 << 20, DType::U8, &shape, &src), 1024).unwrap();
    assert_eq!(spec(&steps), (KernelSpec::Transpose { bytes: 1, packed: true }, 2));
    // f16: words of 2, 64x64 tiles (4 x 2)
    let steps = plan_copy(&raw(0, DType::F16, &shape, &dst), &raw(1 << 20, DType::F16, &shape, &src), 1024).unwrap();
    assert_eq!(spec(&steps), (KernelSpec::Transpose { bytes: 2, packed: true }, 8));
    // f32 has no word-wise kernel: 32x32 tiles (8 x 3)
    let steps = plan_copy(&raw(0, DType::F32, &shape, &dst), &raw(1 << 20, DType::F32, &shape, &src), 1024).unwrap();
    assert_eq!(spec(&steps), (KernelSpec::Transpose { bytes: 4, packed: false }, 24));
    // a start off the word boundary, an odd extent: element by element
    let steps = plan_copy(&raw(2, DType::U8, &shape, &dst), &raw(1 << 20, DType::U8, &shape, &src), 1024).unwrap();
    assert_eq!(spec(&steps).0, KernelSpec::Transpose { bytes: 1, packed: false });
    let odd = [256usize, 95];
    let (dst, src) = ([95isize, 1], [1isize, 256]);
    let steps = plan_copy(&raw(0, DType::F16, &odd, &dst), &raw(1 << 20, DType::F16, &odd, &src), 1024).unwrap();
    assert_eq!(spec(&steps).0, KernelSpec::Transpose { bytes: 2, packed: false });
}

#[test]
fn huge_plans_use_64_bit_indexing() {
    let shape = [1usize << 16, 1 << 15]; // 2^31 elements
                                         // an input read every other element: the strided kernel
    let (d, s) = ([1isize << 15, 1], [1isize << 16, 2]);
    let f = CudaMapKernel { compute: DType::F32, output: DType::F32, function: "f", source: "" };
    let steps =
        plan_map(&f, &raw(0, DType::F32, &shape, &d), &[raw(0, DType::F32, &shape, &s)], &[], None, 1024).unwrap();
    let ks = kernels(&steps);
    assert!(matches!(ks[0].spec, KernelSpec::Map { layout: MapLayout::Strided(Index::I64), .. }));
    // a transposed input: the tiled kernel (64-bit index math throughout)
    let t = [1isize, 1 << 16];
    let steps =
        plan_map(&f, &raw(0, DType::F32, &shape, &d), &[raw(0, DType::F32, &shape, &t)], &[], None, 1024).unwrap();
    assert!(matches!(kernels(&steps)[0].spec, KernelSpec::Map { layout: MapLayout::Tiled, .. }));
    let small = [1usize << 10, 1 << 10];
    let steps = plan_map(
        &f,
        &raw(0, DType::F32, &small, &[1 << 10, 1]),
        &[raw(0, DType::F32, &small, &[1 << 11, 2])],
        &[],
        None,
        1024,
    )
    .unwrap();
    assert!(matches!(kernels(&steps)[0].spec, KernelSpec::Map { layout: MapLayout::Strided(Index::I32), .. }));
    // 2^31 dense elements stay on the contiguous kernel (64-bit count)
    let dense = [1usize << 31];
    let steps =
        plan_map(&f, &raw(0, DType::F32, &dense, &[1]), &[raw(0, DType::F32, &dense, &[1])], &[], None, 1024).unwrap();
    let Args::Contig(a) = kernels(&steps)[0].args else { panic!() };
    assert_eq!(a.n, 1 << 31);
}

#[test]
fn deep_plans_are_split_on_the_host() {
    // 10 dims of 2 that cannot coalesce (the input walks them in reverse order)
    let shape = [2usize; 10];
    let out: Vec<isize> = (0..10).map(|d| 1 << (9 - d)).collect();
    let inp: Vec<isize> = (0..10).map(|d| 1 << d).collect();
    let f = CudaMapKernel { compute: DType::F32, output: DType::F32, function: "f", source: "" };
    let steps =
        plan_map(&f, &raw(0, DType::F32, &shape, &out), &[raw(0, DType::F32, &shape, &inp)], &[], None, 64).unwrap();
    let ks = kernels(&steps);
    assert_eq!(ks.len(), 4);
    let Args::Strided32(a) = ks[3].args else { panic!() };
    assert_eq!(a.ndim as usize, MAX_DIMS);
    assert_eq!(a.ptr[0], 4 * (512 + 256)); // out advanced to outer index (1, 1)
    assert_eq!(a.ptr[1], 4 * (1 + 2));
}

#[test]
fn params_are_passed_exactly_in_every_argument_block() {
    use crate::args::{PARAM_BOOL, PARAM_FLOAT, PARAM_INT};
    let f = CudaMapKernel { compute: DType::F64, output: DType::F64, function: "f", source: "" };
    let params = [Scalar::Int(16_777_217), Scalar::Float(0.1), Scalar::Bool(true), Scalar::Int(i64::MIN)];
    let want = [
        KernelParam { bits: 16_777_217, kind: PARAM_INT, pad: 0 },
        KernelParam { bits: 0.1f64.to_bits(), kind: PARAM_FLOAT, pad: 0 },
        KernelParam { bits: 1, kind: PARAM_BOOL, pad: 0 },
        KernelParam { bits: 1 << 63, kind: PARAM_INT, pad: 0 },
    ];
    let shape = [6usize, 7];
    let dense = raw(0, DType::F64, &shape, &[7, 1]);
    let steps = plan_map(&f, &dense, &[dense], &params, None, 8).unwrap();
    let Args::Contig(a) = kernels(&steps)[0].args else { panic!() };
    assert_eq!(a.params, want);
    let steps = plan_map(&f, &dense, &[raw(0, DType::F64, &shape, &[1, 6])], &params, None, 8).unwrap();
    let Args::Strided32(a) = kernels(&steps)[0].args else { panic!() };
    assert_eq!(a.params, want);
    let Args::Strided64(a) = kernels(&widen_index(&steps))[0].args else { panic!() };
    assert_eq!(a.params, want);
    // more params than the argument blocks hold is an error, not a truncation
    let five = [Scalar::Int(1); tensor_core::MAX_PARAMS + 1];
    assert!(plan_map(&f, &dense, &[dense], &five, None, 8).is_err());
}

#[test]
fn broadcast_inputs_set_the_scalar_mask() {
    let shape = [100usize];
    let f = CudaMapKernel { compute: DType::F32, output: DType::F32, function: "f", source: "" };
    let o = raw(0, DType::F32, &shape, &[1]);
    let steps =
        plan_map(&f, &o, &[raw(0, DType::F32, &shape, &[1]), raw(0, DType::F32, &shape, &[0])], &[], None, 8).unwrap();
    let Args::Contig(a) = kernels(&steps)[0].args else { panic!() };
    assert_eq!(a.scalar_mask, 0b10);
}
