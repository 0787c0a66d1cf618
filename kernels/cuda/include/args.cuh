// Kernel argument blocks of tensor-ops, passed by value (no per-launch host allocation).
// Mirrored field for field by `#[repr(C)]` structs in kernels/src/cuda/args.rs. The sizes
// TOPS_MAX_DIMS, TOPS_MAX_OPERANDS and TOPS_MAX_PARAMS are defined in front of this header by
// `codegen::program`, from the Rust constants (tensor_core::MAX_INPUTS / MAX_PARAMS and
// args::MAX_DIMS): one definition of each limit.
#pragma once

#if !defined(TOPS_MAX_DIMS) || !defined(TOPS_MAX_OPERANDS) || !defined(TOPS_MAX_PARAMS)
#error "args.cuh needs TOPS_MAX_DIMS, TOPS_MAX_OPERANDS and TOPS_MAX_PARAMS (codegen::program defines them)"
#endif

#define TOPS_PARAM_BOOL 0u
#define TOPS_PARAM_INT 1u
#define TOPS_PARAM_FLOAT 2u

/// The double whose IEEE bits are `b`.
TOPS_D double tops_f64_of_bits(unsigned long long b) {
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)b);
#else
    double d;
    __builtin_memcpy(&d, &b, sizeof d);
    return d;
#endif
}

/// One op parameter, exactly the caller's `tensor_core::Scalar`: a bool (0/1), an i64 or
/// an f64 in `bits`, told apart by `kind` (TOPS_PARAM_*). Passed to the op's device function,
/// it converts to the type the function declares for that param (the conversion operator's
/// `T`: bool, long long, float or double) with Rust `as` rules, so a param given in its
/// declared type arrives exactly (an f32 param travels as the f64 of the same value).
struct tops_param {
    unsigned long long bits;
    unsigned int kind;
    unsigned int pad;
    template <class T> TOPS_D operator T() const {
        if (kind == TOPS_PARAM_FLOAT) return tops_cast<T>(tops_f64_of_bits(bits));
        if (kind == TOPS_PARAM_INT) return tops_cast<T>((long long)bits);
        return tops_cast<T>(bits != 0ull);
    }
};

/// A quantized operand's arithmetic (tensor_core::quant::Affine; zero for plain operands):
/// inputs are dequantized on load, the output quantized before its store.
struct tops_affine {
    float scale;
    float inv; // 1/scale rounded to f32
    float zp;
    float pad;
};

/// The value of the stored integer `q` (given as float): `(q - zp) * scale`.
TOPS_D float tops_dequantize(float q, tops_affine a) {
    return (q - a.zp) * a.scale;
}

/// The integer (as an integral float in lo..=hi) that stores `x`: round half to even of
/// `x * inv`, plus zp, saturated; NaN gives `nan`. The same bits as the CPU's.
TOPS_D float tops_quantize(float x, tops_affine a, float lo, float hi, float nan) {
    const float v = rintf(x * a.inv) + a.zp;
    if (v != v) return nan;
    return fminf(fmaxf(v, lo), hi);
}

/// Every operand dense (or an input that is one broadcast scalar: bit i of scalar_mask).
struct tops_contig_args {
    void* ptr[TOPS_MAX_OPERANDS]; // out, in0, in1, ...
    unsigned long long n;
    unsigned long long bits; // fill value (raw bits)
    unsigned int scalar_mask;
    tops_param params[TOPS_MAX_PARAMS];
    tops_affine q[TOPS_MAX_OPERANDS]; // quantized operands (out, in0, ...)
};

/// Strided operands, every offset < 2^31 elements and n < 2^31. Dims innermost first.
struct tops_strided_args32 {
    void* ptr[TOPS_MAX_OPERANDS];
    unsigned long long bits;
    unsigned int n;
    int ndim;
    unsigned int size[TOPS_MAX_DIMS];
    unsigned int magic[TOPS_MAX_DIMS];
    unsigned int shift[TOPS_MAX_DIMS];
    int stride[TOPS_MAX_OPERANDS][TOPS_MAX_DIMS];
    tops_param params[TOPS_MAX_PARAMS];
    tops_affine q[TOPS_MAX_OPERANDS];
};

/// Strided operands of any size (64-bit index math). Dims innermost first.
struct tops_strided_args64 {
    void* ptr[TOPS_MAX_OPERANDS];
    unsigned long long bits;
    unsigned long long n;
    int ndim;
    unsigned long long size[TOPS_MAX_DIMS];
    unsigned long long magic[TOPS_MAX_DIMS];
    unsigned int shift[TOPS_MAX_DIMS];
    long long stride[TOPS_MAX_OPERANDS][TOPS_MAX_DIMS];
    tops_param params[TOPS_MAX_PARAMS];
    tops_affine q[TOPS_MAX_OPERANDS];
};

/// dst[b][r][c] = src[b][r][c] where dst is dense along c and src along r (tiled transpose).
struct tops_transpose_args {
    void* dst;
    const void* src;
    long long batch, rows, cols;
    long long dst_bs, dst_rs, dst_cs;
    long long src_bs, src_rs, src_cs;
};

/// A reduction: `n_out` outputs (kept dims, innermost first) each folding `n_red` elements
/// (reduced dims, innermost first), the extent cut into `split` slices of `chunk` elements;
/// with split > 1 each (output, slice) partial goes to `work[o * split + s]`.
struct tops_reduce_args {
    void* out;
    const void* in;
    void* work;
    long long n_out, n_red, split, chunk;
    int kdim, rdim;
    long long ksize[TOPS_MAX_DIMS], kin[TOPS_MAX_DIMS], kout[TOPS_MAX_DIMS];
    long long rsize[TOPS_MAX_DIMS], rin[TOPS_MAX_DIMS], ridx[TOPS_MAX_DIMS];
    tops_param params[TOPS_MAX_PARAMS];
};

struct tops_fused_reduce_args {
    tops_reduce_args r;       // the reduction over the chain's virtual (dense) result
    tops_strided_args64 m;    // the leaves (ptr[1..]) on the map plan of that result
};

/// A kernel of the sparse layouts' steps (kernels/cuda/include/sparse*.cuh): device addresses
/// (null where unused), the count its grid covers and integer parameters.
struct tops_sparse_args {
    void* ptr[8];
    long long n;
    long long p[6];
};
