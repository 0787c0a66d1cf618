//! The limits of an elementwise op: how many tensor inputs and scalar params it may take.
//!
//! The one definition of each limit. `#[tensor_op]` checks a definition against them at
//! compile time (it emits `const` assertions against these constants, spanned at the
//! offending argument, with [`TOO_MANY_INPUTS`] / [`TOO_MANY_PARAMS`] as the message); the
//! CPU driver and the CUDA argument blocks (`tensor_kernels_cuda::args`, and the
//! `TOPS_MAX_*` defines of the generated CUDA C) size themselves from them.

/// Most tensor inputs of an elementwise op (the output is one more operand).
pub const MAX_INPUTS: usize = 3;

/// Most scalar params (`#[param]`) of an elementwise op.
pub const MAX_PARAMS: usize = 4;

/// The compile error for a definition with more than [`MAX_INPUTS`] tensor arguments.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// assert_eq!(tensor_ops::tensor_core::limits::TOO_MANY_INPUTS, "a #[tensor_op] takes at most 3 tensor arguments (tensor_core::MAX_INPUTS)");
/// ```
pub const TOO_MANY_INPUTS: &str = TOO_MANY_INPUTS_MSG.as_str();

/// The compile error for a definition with more than [`MAX_PARAMS`] `#[param]`s.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// assert_eq!(tensor_ops::tensor_core::limits::TOO_MANY_PARAMS, "a #[tensor_op] takes at most 4 #[param]s (tensor_core::MAX_PARAMS)");
/// ```
pub const TOO_MANY_PARAMS: &str = TOO_MANY_PARAMS_MSG.as_str();

const TOO_MANY_INPUTS_MSG: Msg =
    Msg::new("a #[tensor_op] takes at most ", MAX_INPUTS, " tensor arguments (tensor_core::MAX_INPUTS)");
const TOO_MANY_PARAMS_MSG: Msg =
    Msg::new("a #[tensor_op] takes at most ", MAX_PARAMS, " #[param]s (tensor_core::MAX_PARAMS)");

/// `pre`, the decimal digits of `n`, `post`: a message built at compile time (a `const`
/// panic cannot format integers).
struct Msg {
    buf: [u8; 128],
    len: usize,
}

impl Msg {
    const fn new(pre: &str, n: usize, post: &str) -> Msg {
        let mut m = Msg { buf: [0; 128], len: 0 };
        m = m.push(pre.as_bytes());
        let mut digits = [0u8; 20];
        let (mut k, mut rest) = (digits.len(), n);
        loop {
            k -= 1;
            digits[k] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        m = m.push(digits.split_at(k).1);
        m.push(post.as_bytes())
    }

    const fn push(mut self, s: &[u8]) -> Msg {
        let mut i = 0;
        while i < s.len() {
            self.buf[self.len] = s[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn as_str(&'static self) -> &'static str {
        match std::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "a #[tensor_op] exceeds a limit of tensor_core::limits",
        }
    }
}
