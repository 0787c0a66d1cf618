//! Spanned compile errors and a collector that reports several at once.

use quote::ToTokens;
use std::fmt::Display;

/// A `syn::Error` spanned on `tokens` (every token of it, so the caret covers the whole span).
pub fn error(tokens: impl ToTokens, msg: impl Display) -> syn::Error {
    syn::Error::new_spanned(tokens, msg)
}

/// Collects errors so that one pass can report every problem it finds.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    /// Records an error.
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// Records the error of `r`, if any, and returns its value.
    pub fn take<T>(&mut self, r: syn::Result<T>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `Err` with every recorded error, or `Ok(())`.
    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
