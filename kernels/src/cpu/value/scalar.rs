//! `Value` for plain scalars (one lane).
