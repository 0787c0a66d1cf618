// tensor-ops CUDA prelude: the helper functions every generated kernel and every
// `#[tensor_op]` device function is written against. Semantics are those of the CPU
// `Value` algebra (kernels/src/cpu/value/mod.rs):
//  - integers wrap (signed arithmetic goes through unsigned: no C undefined behaviour);
//    integer division by zero gives 0 and MIN / -1 wraps to MIN;
//  - max/min propagate NaN; float functions are the IEEE-accurate libm ones;
//  - pow on integers is wrapping exponentiation; a negative exponent gives 1/x^n truncated;
//  - float-only functions on integers compute through double and cast back (`as` rules);
//  - bool as a value: + is or, * is and, - is xor, / is and; neg/abs are identity;
//  - tops_cast<D>(S) has Rust `as` semantics (float->int truncates and saturates, NaN->0,
//    x->bool is x != 0, narrowing floats round to nearest even).
// Compiled by NVRTC, and by the host C++ compiler under kernels/cuda-testing/include/shim.h for CPU tests.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define TOPS_D __device__ __forceinline__

// ---------------------------------------------------------------- 8-bit floats
// Storage: one-byte structs with the layout of cuda_fp8.h's __nv_fp8_e4m3/__nv_fp8_e5m2 (a
// byte `__x`). That header is not included: it adds parse time to every kernel NVRTC builds
// and warns under CUDA 13 (deprecated double4), and its conversions saturate E5M2 where
// PyTorch overflows to infinity. The conversions are written here, line for line those of
// tensor-core/src/f8.rs (PyTorch's rule: round to nearest even from the f32 value, an f64
// rounded to f32 first; E4M3 saturates to +-448, infinity too; E5M2 overflows to infinity
// from 61440; NaN -> 0x7f with its sign; a NaN decodes to the quiet NaN of its sign), so
// the CPU, the shim and every GPU give the same bits.
struct tops_f8e4m3 { unsigned char __x; };
struct tops_f8e5m2 { unsigned char __x; };
TOPS_D unsigned int tops_f32_bits(float x) { union { float f; unsigned int u; } c; c.f = x; return c.u; }
TOPS_D float tops_bits_f32(unsigned int u) { union { float f; unsigned int u; } c; c.u = u; return c.f; }
/// `m >> s` rounded to nearest, ties to even (1 <= s <= 63).
TOPS_D unsigned long long tops_shr_rne(unsigned long long m, int s) {
    if (s > 63) return 0ull;
    unsigned long long q = m >> s, rem = m & ((1ull << s) - 1ull), half = 1ull << (s - 1);
    return (rem > half || (rem == half && (q & 1ull))) ? q + 1ull : q;
}
/// Encodes |value| = m * 2^(e - 23), an f32's exponent and significand (m with its implicit
/// bit for normals): every source is rounded from its f32 value.
template <int M, int BIAS, bool FIN>
TOPS_D unsigned char tops_f8_encode(unsigned int sign, int e, unsigned long long m) {
    const int p = 23;
    const unsigned long long maxc = FIN ? 0x7eull : 0x7bull;
    const unsigned int over = FIN ? 0x7eu : 0x7cu;
    if (m == 0ull) return (unsigned char)sign;
    const int emin = 1 - BIAS;
    unsigned long long code;
    if (e >= emin) {
        unsigned long long q = tops_shr_rne(m, p - M); // in [2^M, 2^(M+1)]: a carry moves into the exponent
        code = ((unsigned long long)(e - emin + 1) << M) + q - (1ull << M);
    } else {
        code = tops_shr_rne(m, p - M + (emin - e));
    }
    return (unsigned char)(code > maxc ? sign | over : sign | (unsigned int)code);
}
template <int M, int BIAS, bool FIN> TOPS_D unsigned char tops_f8_from_f32(float x) {
    unsigned int b = tops_f32_bits(x), sign = (b >> 24) & 0x80u, a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned char)(sign | 0x7fu);
    if (a == 0x7f800000u) return (unsigned char)(sign | (FIN ? 0x7eu : 0x7cu));
    int exp = (int)(a >> 23);
    unsigned long long m = a & 0x7fffffu;
    if (exp == 0) return tops_f8_encode<M, BIAS, FIN>(sign, -126, m);
    return tops_f8_encode<M, BIAS, FIN>(sign, exp - 127, m | 0x800000ull);
}
// An f64 is rounded to f32 first, as PyTorch (whose f8 types convert from float) and
// ml_dtypes cast one.
template <int M, int BIAS, bool FIN> TOPS_D unsigned char tops_f8_from_f64(double x) {
    return tops_f8_from_f32<M, BIAS, FIN>((float)x);
}
template <int M, int BIAS, bool FIN> TOPS_D float tops_f8_to_f32(unsigned char bits) {
    unsigned int b = bits, sign = (b & 0x80u) << 24, exp = (b & 0x7fu) >> M, mant = b & ((1u << M) - 1u);
    const unsigned int exp_max = (1u << (7 - M)) - 1u;
    if (FIN ? (b & 0x7fu) == 0x7fu : exp == exp_max)
        return tops_bits_f32(sign | ((FIN || mant) ? 0x7fc00000u : 0x7f800000u));
    if (exp == 0u) // mant * 2^(1 - BIAS - M): exact in f32
        return tops_bits_f32(sign | tops_f32_bits((float)mant * tops_bits_f32((unsigned int)(127 + 1 - BIAS - M) << 23)));
    return tops_bits_f32(sign | ((exp + (unsigned int)(127 - BIAS)) << 23) | (mant << (23 - M)));
}
TOPS_D float tops_f8_value(tops_f8e4m3 x) { return tops_f8_to_f32<3, 7, true>(x.__x); }
TOPS_D float tops_f8_value(tops_f8e5m2 x) { return tops_f8_to_f32<2, 15, false>(x.__x); }

// ---------------------------------------------------------------- limits and bits
template <class T> struct tops_lim;
#define TOPS_LIM(T, U, LO, HI)                                                                   \
    template <> struct tops_lim<T> {                                                             \
        typedef U unsigned_t;                                                                    \
        static TOPS_D T lo() { return LO; }                                                      \
        static TOPS_D T hi() { return HI; }                                                      \
    };
TOPS_LIM(unsigned char, unsigned int, 0, 255)
TOPS_LIM(signed char, unsigned int, -128, 127)
TOPS_LIM(short, unsigned int, -32768, 32767)
TOPS_LIM(int, unsigned int, (-2147483647 - 1), 2147483647)
TOPS_LIM(long long, unsigned long long, (-9223372036854775807LL - 1), 9223372036854775807LL)
#undef TOPS_LIM

// ---------------------------------------------------------------- casts (Rust `as`)
// Float -> integer: truncate toward zero, saturate, NaN -> 0. The bounds 2^(bits-1) (or 2^8
// for u8) are exact in every float type, so the comparisons are exact.
template <class D> TOPS_D D tops_f2i(double x, double lo_excl_le, double hi_ge) {
    if (x != x) return (D)0;
    if (x <= lo_excl_le) return tops_lim<D>::lo();
    if (x >= hi_ge) return tops_lim<D>::hi();
    return (D)x;
}
template <class D> TOPS_D D tops_f2i(float x, float lo_le, float hi_ge) {
    if (x != x) return (D)0;
    if (x <= lo_le) return tops_lim<D>::lo();
    if (x >= hi_ge) return tops_lim<D>::hi();
    return (D)x;
}

template <class D> struct tops_cvt;

#define TOPS_CVT_INT(D, LO, HI)                                                                  \
    template <> struct tops_cvt<D> {                                                             \
        static TOPS_D D from(bool x) { return (D)(x ? 1 : 0); }                                  \
        static TOPS_D D from(unsigned char x) { return (D)x; }                                   \
        static TOPS_D D from(signed char x) { return (D)x; }                                     \
        static TOPS_D D from(short x) { return (D)x; }                                           \
        static TOPS_D D from(int x) { return (D)x; }                                             \
        static TOPS_D D from(long long x) { return (D)x; }                                       \
        static TOPS_D D from(float x) { return tops_f2i<D>(x, (float)(LO), (float)(HI)); }       \
        static TOPS_D D from(double x) { return tops_f2i<D>(x, (double)(LO), (double)(HI)); }    \
        static TOPS_D D from(__half x) { return from(__half2float(x)); }                         \
        static TOPS_D D from(__nv_bfloat16 x) { return from(__bfloat162float(x)); }              \
        static TOPS_D D from(tops_f8e4m3 x) { return from(tops_f8_value(x)); }                 \
        static TOPS_D D from(tops_f8e5m2 x) { return from(tops_f8_value(x)); }                 \
    };
// LO: values <= LO map to MIN (for unsigned: <= 0 maps to 0); HI: values >= HI map to MAX.
TOPS_CVT_INT(unsigned char, 0.0, 256.0)
TOPS_CVT_INT(signed char, -128.0, 128.0)
TOPS_CVT_INT(short, -32768.0, 32768.0)
TOPS_CVT_INT(int, -2147483648.0, 2147483648.0)
TOPS_CVT_INT(long long, -9223372036854775808.0, 9223372036854775808.0)
#undef TOPS_CVT_INT

template <> struct tops_cvt<bool> {
    template <class S> static TOPS_D bool from(S x) { return x != (S)0; }
    static TOPS_D bool from(bool x) { return x; }
    static TOPS_D bool from(__half x) { return __half2float(x) != 0.0f; }
    static TOPS_D bool from(__nv_bfloat16 x) { return __bfloat162float(x) != 0.0f; }
    static TOPS_D bool from(tops_f8e4m3 x) { return tops_f8_value(x) != 0.0f; }
    static TOPS_D bool from(tops_f8e5m2 x) { return tops_f8_value(x) != 0.0f; }
};

#define TOPS_CVT_FLOAT(D)                                                                        \
    template <> struct tops_cvt<D> {                                                             \
        template <class S> static TOPS_D D from(S x) { return (D)x; }                            \
        static TOPS_D D from(bool x) { return x ? (D)1 : (D)0; }                                 \
        static TOPS_D D from(__half x) { return (D)__half2float(x); }                            \
        static TOPS_D D from(__nv_bfloat16 x) { return (D)__bfloat162float(x); }                 \
        static TOPS_D D from(tops_f8e4m3 x) { return (D)tops_f8_value(x); }                    \
        static TOPS_D D from(tops_f8e5m2 x) { return (D)tops_f8_value(x); }                    \
    };
TOPS_CVT_FLOAT(float)
TOPS_CVT_FLOAT(double)
#undef TOPS_CVT_FLOAT

// Integers reach the 16-bit floats through double (exact for |x| < 2^53, one rounding), as
// the CPU does; f32/f64 convert with a single round-to-nearest-even.
template <> struct tops_cvt<__half> {
    template <class S> static TOPS_D __half from(S x) { return __double2half((double)x); }
    static TOPS_D __half from(bool x) { return __float2half_rn(x ? 1.0f : 0.0f); }
    static TOPS_D __half from(float x) { return __float2half_rn(x); }
    static TOPS_D __half from(double x) { return __double2half(x); }
    static TOPS_D __half from(__half x) { return x; }
    static TOPS_D __half from(__nv_bfloat16 x) { return __float2half_rn(__bfloat162float(x)); }
    static TOPS_D __half from(tops_f8e4m3 x) { return __float2half_rn(tops_f8_value(x)); }
    static TOPS_D __half from(tops_f8e5m2 x) { return __float2half_rn(tops_f8_value(x)); }
};
template <> struct tops_cvt<__nv_bfloat16> {
    template <class S> static TOPS_D __nv_bfloat16 from(S x) { return __double2bfloat16((double)x); }
    static TOPS_D __nv_bfloat16 from(bool x) { return __float2bfloat16_rn(x ? 1.0f : 0.0f); }
    static TOPS_D __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
    static TOPS_D __nv_bfloat16 from(double x) { return __double2bfloat16(x); }
    static TOPS_D __nv_bfloat16 from(__nv_bfloat16 x) { return x; }
    static TOPS_D __nv_bfloat16 from(__half x) { return __float2bfloat16_rn(__half2float(x)); }
    static TOPS_D __nv_bfloat16 from(tops_f8e4m3 x) { return __float2bfloat16_rn(tops_f8_value(x)); }
    static TOPS_D __nv_bfloat16 from(tops_f8e5m2 x) { return __float2bfloat16_rn(tops_f8_value(x)); }
};
// The 8-bit floats: one rounding from every source (integers through double, as the 16-bit
// floats; f16/bf16/f8 through their exact f32 value).
#define TOPS_CVT_F8(D, M, BIAS, FIN)                                                             \
    template <> struct tops_cvt<D> {                                                             \
        static TOPS_D D make(unsigned char b) { D r; r.__x = b; return r; }                      \
        template <class S> static TOPS_D D from(S x) { return make(tops_f8_from_f64<M, BIAS, FIN>((double)x)); } \
        static TOPS_D D from(bool x) { return make(tops_f8_from_f32<M, BIAS, FIN>(x ? 1.0f : 0.0f)); } \
        static TOPS_D D from(float x) { return make(tops_f8_from_f32<M, BIAS, FIN>(x)); }        \
        static TOPS_D D from(double x) { return make(tops_f8_from_f64<M, BIAS, FIN>(x)); }       \
        /* a 16-bit NaN keeps its sign (the GPU's f16 -> f32 conversion would drop it) */     \
        static TOPS_D D from(__half x) {                                                         \
            __half_raw r = x;                                                                    \
            if ((r.x & 0x7fffu) > 0x7c00u) return make((unsigned char)(((r.x >> 8) & 0x80u) | 0x7fu)); \
            return from(__half2float(x));                                                        \
        }                                                                                        \
        static TOPS_D D from(__nv_bfloat16 x) {                                                  \
            __nv_bfloat16_raw r = x;                                                             \
            if ((r.x & 0x7fffu) > 0x7f80u) return make((unsigned char)(((r.x >> 8) & 0x80u) | 0x7fu)); \
            return from(__bfloat162float(x));                                                    \
        }                                                                                        \
        static TOPS_D D from(tops_f8e4m3 x) { return from(tops_f8_value(x)); }                 \
        static TOPS_D D from(tops_f8e5m2 x) { return from(tops_f8_value(x)); }                 \
    };
TOPS_CVT_F8(tops_f8e4m3, 3, 7, true)
TOPS_CVT_F8(tops_f8e5m2, 2, 15, false)
#undef TOPS_CVT_F8

/// `x as D` with Rust semantics.
template <class D, class S> TOPS_D D tops_cast(S x) { return tops_cvt<D>::from(x); }
/// Literal helpers for generated bodies (`V::from_f32(e)` etc.).
template <class D> TOPS_D D tops_from_f32(float x) { return tops_cast<D>(x); }
template <class D> TOPS_D D tops_from_f64(double x) { return tops_cast<D>(x); }
template <class D> TOPS_D D tops_from_i64(long long x) { return tops_cast<D>(x); }
template <class D> TOPS_D D tops_from_bool(bool x) { return tops_cast<D>(x); }
template <class D> TOPS_D D tops_zero() { return tops_cast<D>(0); }
template <class D> TOPS_D D tops_one() { return tops_cast<D>(1); }

// ---------------------------------------------------------------- selection and masks
template <class T> TOPS_D T tops_select(bool c, T a, T b) { return c ? a : b; }
TOPS_D bool tops_and(bool a, bool b) { return a && b; }
TOPS_D bool tops_or(bool a, bool b) { return a || b; }
TOPS_D bool tops_not(bool a) { return !a; }

// ---------------------------------------------------------------- comparisons
#define TOPS_CMP(T)                                                                              \
    TOPS_D bool tops_eq(T a, T b) { return a == b; }                                            \
    TOPS_D bool tops_ne(T a, T b) { return a != b; }                                            \
    TOPS_D bool tops_lt(T a, T b) { return a < b; }                                             \
    TOPS_D bool tops_le(T a, T b) { return a <= b; }                                            \
    TOPS_D bool tops_gt(T a, T b) { return a > b; }                                             \
    TOPS_D bool tops_ge(T a, T b) { return a >= b; }
TOPS_CMP(bool)
TOPS_CMP(unsigned char)
TOPS_CMP(signed char)
TOPS_CMP(short)
TOPS_CMP(int)
TOPS_CMP(long long)
TOPS_CMP(float)
TOPS_CMP(double)
#undef TOPS_CMP

// ---------------------------------------------------------------- integer arithmetic
/// x < 0, spelled so that unsigned types draw no "pointless comparison" warning.
template <class T> TOPS_D bool tops_is_neg(T x) { return x < (T)0; }
template <> TOPS_D bool tops_is_neg<unsigned char>(unsigned char) { return false; }
#define TOPS_INT_ARITH(T)                                                                        \
    TOPS_D T tops_add(T a, T b) {                                                               \
        typedef tops_lim<T>::unsigned_t U;                                                      \
        return (T)((U)a + (U)b);                                                                 \
    }                                                                                            \
    TOPS_D T tops_sub(T a, T b) {                                                               \
        typedef tops_lim<T>::unsigned_t U;                                                      \
        return (T)((U)a - (U)b);                                                                 \
    }                                                                                            \
    TOPS_D T tops_mul(T a, T b) {                                                               \
        typedef tops_lim<T>::unsigned_t U;                                                      \
        return (T)((U)a * (U)b);                                                                 \
    }                                                                                            \
    TOPS_D T tops_div(T a, T b) {                                                               \
        if (b == (T)0) return (T)0;                                                              \
        if (tops_lim<T>::lo() != (T)0 && a == tops_lim<T>::lo() && b == (T)-1) return a;         \
        return (T)(a / b);                                                                       \
    }                                                                                            \
    TOPS_D T tops_neg(T a) {                                                                    \
        typedef tops_lim<T>::unsigned_t U;                                                      \
        return (T)((U)0 - (U)a);                                                                 \
    }                                                                                            \
    TOPS_D T tops_abs(T a) { return tops_is_neg(a) ? tops_neg(a) : a; }                                 \
    TOPS_D T tops_max(T a, T b) { return a > b ? a : b; }                                       \
    TOPS_D T tops_min(T a, T b) { return a < b ? a : b; }                                       \
    TOPS_D T tops_pow(T x, T e) {                                                               \
        if (tops_is_neg(e)) {                                                                    \
            if (x == (T)1) return (T)1;                                                          \
            if (x == (T)-1) return (e & (T)1) ? (T)-1 : (T)1;                                    \
            return (T)0;                                                                         \
        }                                                                                        \
        typedef tops_lim<T>::unsigned_t U;                                                      \
        U r = 1, b = (U)x;                                                                       \
        unsigned long long n = (unsigned long long)e;                                            \
        while (n) {                                                                              \
            if (n & 1ull) r = (U)(r * b);                                                        \
            b = (U)(b * b);                                                                      \
            n >>= 1;                                                                             \
        }                                                                                        \
        return (T)r;                                                                             \
    }
TOPS_INT_ARITH(unsigned char)
TOPS_INT_ARITH(signed char)
TOPS_INT_ARITH(short)
TOPS_INT_ARITH(int)
TOPS_INT_ARITH(long long)
#undef TOPS_INT_ARITH

// ---------------------------------------------------------------- bool arithmetic
TOPS_D bool tops_add(bool a, bool b) { return a || b; }
TOPS_D bool tops_sub(bool a, bool b) { return a != b; }
TOPS_D bool tops_mul(bool a, bool b) { return a && b; }
TOPS_D bool tops_div(bool a, bool b) { return a && b; }
TOPS_D bool tops_neg(bool a) { return a; }
TOPS_D bool tops_abs(bool a) { return a; }
TOPS_D bool tops_max(bool a, bool b) { return a || b; }
TOPS_D bool tops_min(bool a, bool b) { return a && b; }
TOPS_D bool tops_pow(bool x, bool e) { return e ? x : true; }

// ---------------------------------------------------------------- float arithmetic
#define TOPS_FLOAT_ARITH(T)                                                                      \
    TOPS_D T tops_add(T a, T b) { return a + b; }                                               \
    TOPS_D T tops_sub(T a, T b) { return a - b; }                                               \
    TOPS_D T tops_mul(T a, T b) { return a * b; }                                               \
    TOPS_D T tops_div(T a, T b) { return a / b; }                                               \
    TOPS_D T tops_neg(T a) { return -a; }                                                       \
    TOPS_D T tops_max(T a, T b) { return (a != a || a > b) ? a : b; }                           \
    TOPS_D T tops_min(T a, T b) { return (a != a || a < b) ? a : b; }                           \
    TOPS_D T tops_recip(T a) { return (T)1 / a; }
TOPS_FLOAT_ARITH(float)
TOPS_FLOAT_ARITH(double)
#undef TOPS_FLOAT_ARITH
// (b NaN: `a > b` is false, so b is returned: NaN propagates from either side.)

TOPS_D float tops_abs(float a) { return fabsf(a); }
TOPS_D double tops_abs(double a) { return fabs(a); }
TOPS_D float tops_pow(float a, float b) { return powf(a, b); }
TOPS_D double tops_pow(double a, double b) { return pow(a, b); }

#define TOPS_FLOAT_FN(NAME, F32, F64)                                                            \
    TOPS_D float NAME(float a) { return F32(a); }                                               \
    TOPS_D double NAME(double a) { return F64(a); }                                             \
    TOPS_D bool NAME(bool a) { return tops_cast<bool>(F64(a ? 1.0 : 0.0)); }                    \
    TOPS_D unsigned char NAME(unsigned char a) { return tops_cast<unsigned char>(F64((double)a)); } \
    TOPS_D signed char NAME(signed char a) { return tops_cast<signed char>(F64((double)a)); }   \
    TOPS_D short NAME(short a) { return tops_cast<short>(F64((double)a)); }                     \
    TOPS_D int NAME(int a) { return tops_cast<int>(F64((double)a)); }                           \
    TOPS_D long long NAME(long long a) { return tops_cast<long long>(F64((double)a)); }
TOPS_D float tops_sigmoidf_(float a) { return 1.0f / (1.0f + expf(-a)); }
TOPS_D double tops_sigmoid_(double a) { return 1.0 / (1.0 + exp(-a)); }
TOPS_FLOAT_FN(tops_exp, expf, exp)
TOPS_FLOAT_FN(tops_sigmoid, tops_sigmoidf_, tops_sigmoid_)
TOPS_FLOAT_FN(tops_exp2, exp2f, exp2)
TOPS_FLOAT_FN(tops_ln, logf, log)
TOPS_FLOAT_FN(tops_log2, log2f, log2)
TOPS_FLOAT_FN(tops_sqrt, sqrtf, sqrt)
TOPS_FLOAT_FN(tops_tanh, tanhf, tanh)
TOPS_FLOAT_FN(tops_sin, sinf, sin)
TOPS_FLOAT_FN(tops_cos, cosf, cos)
TOPS_FLOAT_FN(tops_floor, floorf, floor)
TOPS_FLOAT_FN(tops_ceil, ceilf, ceil)
TOPS_FLOAT_FN(tops_round, roundf, round)
#undef TOPS_FLOAT_FN

#define TOPS_INT_RECIP(T)                                                                        \
    TOPS_D T tops_recip(T a) { return tops_cast<T>(1.0 / (double)a); }
TOPS_INT_RECIP(unsigned char)
TOPS_INT_RECIP(signed char)
TOPS_INT_RECIP(short)
TOPS_INT_RECIP(int)
TOPS_INT_RECIP(long long)
#undef TOPS_INT_RECIP
TOPS_D bool tops_recip(bool a) { return a; } // 1/1 = 1; 1/0 = inf -> true

// ---------------------------------------------------------------- storage load/store
/// Loads a storage element as compute type C (f16/bf16 storage converts through float).
template <class C, class S> TOPS_D C tops_load(const S* p) { return tops_cast<C>(*p); }
/// Stores a compute value into storage type S.
template <class S, class C> TOPS_D void tops_store(S* p, C v) { *p = tops_cast<S>(v); }

/// N elements of T loaded or stored with one aligned vector access.
template <class T, int N> struct alignas(sizeof(T) * N) tops_pack {
    T v[N];
};

/// The word type a vector of B bytes is loaded as: 32-bit words (one narrower word below
/// 4 bytes), so a loaded vector of narrow elements stays in the registers it arrived in
/// until its elements are used.
template <int B> struct tops_raw_word { typedef tops_pack<unsigned int, B / 4> type; };
template <> struct tops_raw_word<2> { typedef tops_pack<unsigned short, 1> type; };
template <> struct tops_raw_word<1> { typedef tops_pack<unsigned char, 1> type; };
/// The bytes of a `tops_pack<T, N>` as words.
template <class T, int N> using tops_raw = typename tops_raw_word<(int)sizeof(T) * N>::type;
/// The elements of a vector loaded as words.
template <class T, int N> TOPS_D tops_pack<T, N> tops_from_raw(const tops_raw<T, N>& r) {
    union { tops_raw<T, N> r; tops_pack<T, N> p; } c;
    c.r = r;
    return c.p;
}
/// A vector's bytes as words.
template <class T, int N> TOPS_D tops_raw<T, N> tops_to_raw(const tops_pack<T, N>& p) {
    union { tops_pack<T, N> p; tops_raw<T, N> r; } c;
    c.p = p;
    return c.r;
}

/// The bytes of `lo` (0-3) and `hi` (4-7) picked by the four low nibbles of `sel`, lowest
/// result byte first (CUDA's `__byte_perm` without its sign modes).
TOPS_D unsigned int tops_byte_perm(unsigned int lo, unsigned int hi, unsigned int sel) {
#ifdef __CUDA_ARCH__
    return __byte_perm(lo, hi, sel);
#else
    const unsigned long long v = ((unsigned long long)hi << 32) | lo;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned int)((v >> (8 * ((sel >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
#endif
}

// ---------------------------------------------------------------- fast integer division
// q = (umulhi(n, magic) + n) >> shift, exact for n, d < 2^31 (32-bit) or < 2^63 (64-bit);
// the magic numbers are computed on the host (kernels/src/cuda/divmod.rs).
TOPS_D unsigned int tops_umulhi(unsigned int a, unsigned int b) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (unsigned int)(((unsigned long long)a * b) >> 32);
#endif
}
TOPS_D unsigned long long tops_umulhi(unsigned long long a, unsigned long long b) {
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
#endif
}
template <class U> TOPS_D U tops_fastdiv(U n, U magic, unsigned int shift) {
    return (tops_umulhi(n, magic) + n) >> shift;
}
