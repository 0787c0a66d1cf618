//! `Tensor` methods for the built-in ops (`a.add(&b)?`, `a.add_(&b)?`), brought into scope
//! by `use tensor_ops::prelude::*`.

use crate::builtin;
use tensor_core::{Result, Tensor};

macro_rules! unary_methods {
    ($($name:ident, $inplace:ident, $doc:literal;)*) => {
        $(
            #[doc = concat!($doc, " Returns a new tensor.\n\n```\nuse tensor_ops::prelude::*;\nlet x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();\nlet y = x.", stringify!($name), "().unwrap();\nassert_eq!(y.shape(), &[2]);\n```")]
            fn $name(&self) -> Result<Tensor>;
            #[doc = concat!($doc, " In place (the result must fit this tensor's dtype).")]
            fn $inplace(&self) -> Result<()>;
        )*
    };
}

macro_rules! binary_methods {
    ($($name:ident, $inplace:ident, $doc:literal;)*) => {
        $(
            #[doc = concat!($doc, " With NumPy broadcasting and PyTorch type promotion.\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();\nlet b = Tensor::from_vec(vec![3.0f32], &[1]).unwrap();\nassert_eq!(a.", stringify!($name), "(&b).unwrap().shape(), &[2]);\n```")]
            fn $name(&self, other: &Tensor) -> Result<Tensor>;
            #[doc = concat!($doc, " In place into `self` (`other` broadcasts to `self`'s shape).")]
            fn $inplace(&self, other: &Tensor) -> Result<()>;
        )*
    };
}

macro_rules! compare_methods {
    ($($name:ident, $doc:literal;)*) => {
        $(
            #[doc = concat!($doc, " → a `Bool` tensor.\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1i32, 5], &[2]).unwrap();\nlet b = Tensor::from_vec(vec![3i32, 3], &[2]).unwrap();\nassert_eq!(a.", stringify!($name), "(&b).unwrap().dtype(), DType::Bool);\n```")]
            fn $name(&self, other: &Tensor) -> Result<Tensor>;
        )*
    };
}

/// The built-in elementwise ops as methods of [`Tensor`].
pub trait TensorOps {
    unary_methods! {
        neg, neg_, "`-x`.";
        abs, abs_, "`|x|`.";
        exp, exp_, "`e^x`.";
        log, log_, "Natural log.";
        sqrt, sqrt_, "Square root.";
        relu, relu_, "`max(x, 0)`.";
        sigmoid, sigmoid_, "Logistic sigmoid.";
        tanh, tanh_, "Hyperbolic tangent.";
        sin, sin_, "Sine.";
        cos, cos_, "Cosine.";
    }
    binary_methods! {
        add, add_, "`a + b`.";
        sub, sub_, "`a - b`.";
        mul, mul_, "`a * b`.";
        div, div_, "True division `a / b`.";
        maximum, maximum_, "Elementwise NaN-propagating maximum.";
        minimum, minimum_, "Elementwise NaN-propagating minimum.";
        pow, pow_, "`a` to the power `b`.";
    }
    compare_methods! {
        eq, "`a == b`";
        ne, "`a != b`";
        lt, "`a < b`";
        le, "`a <= b`";
        gt, "`a > b`";
        ge, "`a >= b`";
    }
}

macro_rules! impl_unary {
    ($($name:ident, $inplace:ident;)*) => { $(
        fn $name(&self) -> Result<Tensor> { builtin::$name(self) }
        fn $inplace(&self) -> Result<()> { builtin::$inplace(self) }
    )* };
}
macro_rules! impl_binary {
    ($($name:ident, $inplace:ident;)*) => { $(
        fn $name(&self, other: &Tensor) -> Result<Tensor> { builtin::$name(self, other) }
        fn $inplace(&self, other: &Tensor) -> Result<()> { builtin::$inplace(self, other) }
    )* };
}
macro_rules! impl_compare {
    ($($name:ident;)*) => { $(
        fn $name(&self, other: &Tensor) -> Result<Tensor> { builtin::$name(self, other) }
    )* };
}

impl TensorOps for Tensor {
    impl_unary! {
        neg, neg_; abs, abs_; exp, exp_; log, log_; sqrt, sqrt_; relu, relu_;
        sigmoid, sigmoid_; tanh, tanh_; sin, sin_; cos, cos_;
    }
    impl_binary! {
        add, add_; sub, sub_; mul, mul_; div, div_; maximum, maximum_; minimum, minimum_; pow, pow_;
    }
    impl_compare! { eq; ne; lt; le; gt; ge; }
}
