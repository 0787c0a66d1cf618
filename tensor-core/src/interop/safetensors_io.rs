//! `.safetensors` files (feature `safetensors`, which tensor-ops' `safetensors` feature turns
//! on; users reach it as `tensor_ops::safetensors_io`): [`load`] memory-maps a file and returns
//! every tensor as a read-only view of the mapping (no copy), [`save`] writes any set of
//! named tensors (strided ones are written contiguous).
//!
//! A quantized tensor is saved as its stored integers (`I8`, `U8`, `I32`) with its quantizer
//! in the file's `__metadata__` under `tensor_ops.quantizer.<name>` (its dtype, and scale and
//! zero point, or axis, scales and zero points; f64 written in shortest round-trip form), and
//! [`load`] gives it back quantized. Other readers see the integers and the metadata.
//!
//! A tensor whose bytes in the file are not aligned to its element size (the format does
//! not promise it), or a `bool` tensor holding bytes other than 0/1, is copied instead of
//! mapped; every other tensor shares the mapping, which stays alive until the last view of
//! the last tensor from the file is dropped.

use crate::{DType, Device, Error, Result, Storage, Tensor};
use memmap2::Mmap;
use safetensors::tensor::{Dtype as StDtype, SafeTensors, View};
use std::borrow::Cow;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

const OP_LOAD: &str = "safetensors::load";
const OP_SAVE: &str = "safetensors::save";

fn to_dtype(d: StDtype, name: &str) -> Result<DType> {
    Ok(match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I8 => DType::I8,
        StDtype::I16 => DType::I16,
        StDtype::I32 => DType::I32,
        StDtype::I64 => DType::I64,
        // safetensors' F8_E4M3 is the finite-only "fn" format (PyTorch's float8_e4m3fn).
        StDtype::F8_E4M3 => DType::F8E4M3,
        StDtype::F8_E5M2 => DType::F8E5M2,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::F32 => DType::F32,
        StDtype::F64 => DType::F64,
        other => {
            return Err(Error::DType {
                op: OP_LOAD,
                msg: format!(
                    "tensor {name:?} has dtype {other:?}, which tensor-ops does not have (bool, u8, i8, i16, i32, i64, f8e4m3 = F8_E4M3, f8e5m2 = F8_E5M2, f16, bf16, f32, f64)"
                ),
            })
        }
    })
}

fn from_dtype(d: DType) -> StDtype {
    match d {
        DType::Bool => StDtype::BOOL,
        DType::U8 => StDtype::U8,
        DType::I8 => StDtype::I8,
        DType::I16 => StDtype::I16,
        DType::I32 => StDtype::I32,
        DType::I64 => StDtype::I64,
        DType::F8E4M3 => StDtype::F8_E4M3,
        DType::F8E5M2 => StDtype::F8_E5M2,
        DType::F16 => StDtype::F16,
        DType::BF16 => StDtype::BF16,
        DType::F32 => StDtype::F32,
        DType::F64 => StDtype::F64,
        // Saved as the stored integers; the quantizer goes into the file's metadata.
        DType::QInt8 | DType::QUInt8 | DType::QInt32 => from_dtype(d.repr()),
    }
}

fn io_error(op: &'static str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid(op, format!("{}: {e}", path.display()))
}

/// Loads every tensor of a `.safetensors` file, in the file's order, as read-only CPU
/// tensors that view the memory-mapped file (see the module docs for the two cases that
/// copy). Writes into them are `Error::ReadOnly`; ops make new writable tensors, and
/// `deep_clone()` makes a writable copy (`contiguous()` of a contiguous tensor is the same
/// read-only view, not a copy).
///
/// ```
/// # extern crate tensor_core as tensor_ops; // the example as a user of tensor-ops writes it
/// # fn main() -> tensor_ops::Result<()> {
/// use tensor_ops::Tensor;
/// let path = std::env::temp_dir().join("tensor_ops_doc_load.safetensors");
/// let w = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2])?;
/// tensor_ops::safetensors_io::save(&path, &[("w", &w.t()?)])?;
/// let loaded = tensor_ops::safetensors_io::load(&path)?;
/// assert_eq!(loaded[0].0, "w");
/// assert_eq!(loaded[0].1.to_vec::<f32>()?, vec![1., 3., 2., 4.]);
/// assert!(loaded[0].1.fill_(0.0).is_err()); // read-only
/// # Ok(()) }
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| io_error(OP_LOAD, path, e))?;
    // SAFETY: the mapping is read-only and shared; tensor-ops never writes through it (the
    // storages are read-only). Another process truncating or rewriting the file while it is
    // mapped is outside what any mmap user can prevent; it is documented on `load`.
    let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(|e| io_error(OP_LOAD, path, e))?);
    let parsed = SafeTensors::deserialize(&map).map_err(|e| io_error(OP_LOAD, path, e))?;
    let (_, header) = SafeTensors::read_metadata(&map).map_err(|e| io_error(OP_LOAD, path, e))?;
    let quantizers = header.metadata().clone().unwrap_or_default();
    let mut out = Vec::new();
    for (name, view) in parsed.iter() {
        let dtype = to_dtype(view.dtype(), name)?;
        let shape = view.shape().to_vec();
        let bytes = view.data();
        let aligned = (bytes.as_ptr() as usize).is_multiple_of(dtype.size());
        let clean_bools = dtype != DType::Bool || bytes.iter().all(|&b| b <= 1);
        let tensor = if aligned && clean_bools && !bytes.is_empty() {
            let keep = Arc::clone(&map);
            let ptr = NonNull::new(bytes.as_ptr() as *mut u8).ok_or_else(|| io_error(OP_LOAD, path, "null data"))?;
            // SAFETY: `ptr..ptr+len` lies inside the mapping, which the deleter keeps alive
            // (it owns an Arc of it) until the storage is dropped; the bytes are initialized
            // (file contents), aligned for `dtype` (checked), 0/1 for bool (checked). The
            // storage is marked read-only right below, before any view exists, so the
            // read-only mapping is never written.
            let storage = unsafe {
                Storage::from_external(ptr, bytes.len(), dtype, Device::Cpu, Box::new(move |_, _| drop(keep)))
            };
            storage.set_read_only();
            Tensor::from_storage(storage, &shape)?
        } else {
            copy_out(dtype, &shape, bytes)?
        };
        let tensor = match quantizers.get(&format!("{QUANT_KEY}{name}")) {
            Some(text) => with_quantizer(tensor, &parse_quantizer(text, name)?)?,
            None => tensor,
        };
        out.push((name.to_string(), tensor));
    }
    Ok(out)
}

/// The metadata key prefix of a quantized tensor's quantizer.
const QUANT_KEY: &str = "tensor_ops.quantizer.";

/// `qint8;per_tensor;0.1;3` or `qint8;per_channel;1;0.1,0.2;0,1`.
fn format_quantizer(q: &crate::Quantizer) -> String {
    match q {
        crate::Quantizer::PerTensor { dtype, scale, zero_point } => {
            format!("{dtype};per_tensor;{scale:?};{zero_point}")
        }
        crate::Quantizer::PerChannel { dtype, axis, scales, zero_points } => {
            let s: Vec<String> = scales.iter().map(|v| format!("{v:?}")).collect();
            let z: Vec<String> = zero_points.iter().map(|v| v.to_string()).collect();
            format!("{dtype};per_channel;{axis};{};{}", s.join(","), z.join(","))
        }
    }
}

fn parse_quantizer(text: &str, name: &str) -> Result<crate::Quantizer> {
    let bad = || {
        Error::invalid(OP_LOAD, format!("tensor {name:?} has a malformed quantizer in the file's metadata: {text:?}"))
    };
    let parts: Vec<&str> = text.split(';').collect();
    let dtype = parts.first().and_then(|d| DType::from_name(d)).filter(|d| d.is_quantized()).ok_or_else(bad)?;
    match parts[1..] {
        ["per_tensor", scale, zp] => {
            crate::Quantizer::per_tensor(dtype, scale.parse().map_err(|_| bad())?, zp.parse().map_err(|_| bad())?)
        }
        ["per_channel", axis, scales, zps] => {
            let scales = items(scales).map(|v| v.parse().map_err(|_| bad())).collect::<Result<Vec<f64>>>()?;
            let zps = items(zps).map(|v| v.parse().map_err(|_| bad())).collect::<Result<Vec<i64>>>()?;
            crate::Quantizer::per_channel(dtype, axis.parse().map_err(|_| bad())?, scales, zps)
        }
        _ => Err(bad()),
    }
}

/// The comma-separated items of `s` (none when empty).
fn items(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').filter(move |_| !s.is_empty())
}

/// `t` (the stored integers) as a quantized tensor with `q`.
fn with_quantizer(t: Tensor, q: &crate::Quantizer) -> Result<Tensor> {
    if t.dtype() != q.dtype().repr() {
        return Err(Error::DType {
            op: OP_LOAD,
            msg: format!(
                "a {} quantizer needs {} integers in the file, got {}",
                q.dtype(),
                q.dtype().repr(),
                t.dtype()
            ),
        });
    }
    t.quantized_view(q.clone())
}

/// An owned (writable) tensor holding `bytes` (little-endian elements; bools normalised).
fn copy_out(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Tensor> {
    let t = Tensor::zeros(shape, dtype, Device::Cpu)?;
    {
        let mut guard = t.storage().write_for(OP_LOAD)?;
        let dst = guard.as_mut_ptr();
        // SAFETY: `t` is a fresh contiguous tensor of exactly `bytes.len()` bytes
        // (shape × size, checked by the format), exclusively locked by `guard`.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst, bytes.len()) };
        if dtype == DType::Bool {
            for (d, &s) in dst.iter_mut().zip(bytes) {
                *d = (s != 0) as u8;
            }
        } else {
            dst.copy_from_slice(bytes);
        }
    }
    Ok(t)
}

/// A tensor prepared for writing: its dtype, shape and contiguous bytes.
struct Entry {
    dtype: DType,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> StDtype {
        from_dtype(self.dtype)
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Checks the names of a save before anything is written: each non-empty, not the
/// format's reserved `__metadata__` key, and no two alike (a file must load back).
fn check_names(tensors: &[(&str, &Tensor)]) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(tensors.len());
    for (i, (name, _)) in tensors.iter().enumerate() {
        if name.is_empty() {
            return Err(Error::invalid(
                OP_SAVE,
                format!("tensor {i} has an empty name; every tensor needs a non-empty, unique name"),
            ));
        }
        if *name == "__metadata__" {
            return Err(Error::invalid(
                OP_SAVE,
                format!(
                    "tensor {i} is named {name:?}, the key safetensors reserves for the file's metadata; \
                     use any other non-empty, unique name"
                ),
            ));
        }
        if !seen.insert(*name) {
            return Err(Error::invalid(
                OP_SAVE,
                format!(
                    "two tensors are named {name:?} (the second is tensor {i}); every name in a file must be unique"
                ),
            ));
        }
    }
    Ok(())
}

/// Writes `tensors` (any device, dtype and strides; written row-major) to a
/// `.safetensors` file at `path`.
///
/// Names must be non-empty, unique and not `__metadata__` (the format's reserved key);
/// a name breaking these rules is an `Err` before the file is created or touched.
///
/// ```
/// # extern crate tensor_core as tensor_ops; // the example as a user of tensor-ops writes it
/// # fn main() -> tensor_ops::Result<()> {
/// use tensor_ops::Tensor;
/// let path = std::env::temp_dir().join("tensor_ops_doc_save.safetensors");
/// let x = Tensor::from_vec(vec![1i32, 2], &[2])?;
/// assert!(tensor_ops::safetensors_io::save(&path, &[("x", &x), ("x", &x)]).is_err());
/// tensor_ops::safetensors_io::save(&path, &[("x", &x)])?;
/// assert_eq!(tensor_ops::safetensors_io::load(&path)?[0].1.to_vec::<i32>()?, vec![1, 2]);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok(()) }
/// ```
pub fn save(path: impl AsRef<Path>, tensors: &[(&str, &Tensor)]) -> Result<()> {
    let path = path.as_ref();
    check_names(tensors)?;
    let mut entries = Vec::with_capacity(tensors.len());
    let mut metadata = std::collections::HashMap::new();
    for (name, t) in tensors {
        let host = t.to_device(Device::Cpu)?.contiguous()?;
        if let Some(q) = host.quantizer() {
            metadata.insert(format!("{QUANT_KEY}{name}"), format_quantizer(q));
        }
        let host = host.repr_view();
        let bytes = crate::with_dtype!(host.dtype(), T => {
            let v = host.to_vec::<T>()?;
            let n = v.len() * std::mem::size_of::<T>();
            // SAFETY: `v` holds `n` initialized bytes of plain-old-data elements (every
            // dtype here is a number or a 0/1 bool), read once as bytes.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), n) }.to_vec()
        });
        entries.push((name.to_string(), Entry { dtype: host.dtype(), shape: host.shape().to_vec(), bytes }));
    }
    let views = entries.iter().map(|(n, e)| (n.clone(), e));
    let metadata = if metadata.is_empty() { None } else { Some(metadata) };
    safetensors::tensor::serialize_to_file(views, metadata, path).map_err(|e| io_error(OP_SAVE, path, e))
}
