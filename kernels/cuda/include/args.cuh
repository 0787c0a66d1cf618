// Kernel argument blocks of tensor-ops, passed by value (no per-launch host allocation).
// Mirrored field for field by `#[repr(C)]` structs in kernels/src/cuda/args.rs.
#pragma once

#define TOPS_MAX_DIMS 8
#define TOPS_MAX_OPERANDS 4
#define TOPS_MAX_PARAMS 4

/// Every operand dense (or an input that is one broadcast scalar: bit i of scalar_mask).
struct tops_contig_args {
    void* ptr[TOPS_MAX_OPERANDS]; // out, in0, in1, in2
    unsigned long long n;
    unsigned long long bits; // fill value (raw bits)
    unsigned int scalar_mask;
    float params[TOPS_MAX_PARAMS];
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
    float params[TOPS_MAX_PARAMS];
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
    float params[TOPS_MAX_PARAMS];
};

/// dst[b][r][c] = src[b][r][c] where dst is dense along c and src along r (tiled transpose).
struct tops_transpose_args {
    void* dst;
    const void* src;
    long long batch, rows, cols;
    long long dst_bs, dst_rs, dst_cs;
    long long src_bs, src_rs, src_cs;
};
