//! `Value` for SIMD vectors (`wide`).

use super::Value;
use tensor_core::Element;

/// An element type with a SIMD vector type.
pub trait SimdElement: Element + Value<Elem = Self> {
    /// The vector of this element.
    type Lanes: Value<Elem = Self>;
}

/// Placeholder name for the vector wrapper.
pub struct Lanes<E>(std::marker::PhantomData<E>);
