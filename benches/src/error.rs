//! The error type of the bench library: everything a user's input (flags, files, machine
//! state) can make fail is a value, not a panic.

use std::path::PathBuf;

/// An error from the bench library or a runner.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A command-line flag was unknown, missing its value, or had a bad value.
    #[error("bad argument: {0}")]
    Args(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A baseline or report file was not valid JSON of the expected shape.
    #[error("{path}: not a valid report: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// A tensor-ops call failed.
    #[error("tensor-ops: {0}")]
    Tensor(#[from] tensor_ops::Error),
    /// The GPU runtime is missing or failed (driver, device, events).
    #[error("cuda: {0}")]
    Cuda(String),
    /// A measurement could not be taken (e.g. a case's setup is invalid).
    #[error("{0}")]
    Other(String),
}

/// `Result` with [`BenchError`].
pub type BenchResult<T> = Result<T, BenchError>;

impl BenchError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BenchError::Io { path: path.into(), source }
    }
}
