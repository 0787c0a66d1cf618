//! The dispatch table: rows of (op, device kind, layout) → one kernel slot per dtype.
//!
//! Rows are submitted from any crate with [`inventory`] (the `#[tensor_op]` macro does it),
//! collected once at first use into a map, and read lock-free afterwards.

use crate::{DType, Device, DeviceKind, Error, Layout, Result, Scalar};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

/// A raw strided operand handed to a kernel: `ptr` already points at element `[0, 0, ...]`.
/// The caller holds the storage lock for the duration of the kernel call.
#[derive(Debug, Clone, Copy)]
pub struct RawTensor<'a> {
    /// Address of the first logical element (device address for CUDA).
    pub ptr: *mut u8,
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub shape: &'a [usize],
    /// Strides in elements.
    pub strides: &'a [isize],
    /// Device of `ptr`.
    pub device: Device,
}

/// Copies `src` into `dst` elementwise with a cast (Rust `as` rules). Shapes are equal
/// (broadcast sources come with stride 0). `dst` has no internal overlap and does not
/// partially overlap `src`.
///
/// # Safety
/// Both operands' storages are locked (dst exclusively) and every reachable element lies
/// inside its storage.
pub type CopyFn = unsafe fn(dst: &RawTensor<'_>, src: &RawTensor<'_>) -> Result<()>;

/// Writes `value` (cast to `dst.dtype`) into every element of `dst`.
///
/// # Safety
/// As for [`CopyFn`].
pub type FillFn = unsafe fn(dst: &RawTensor<'_>, value: Scalar) -> Result<()>;

/// Computes `n` outputs from contiguous blocks of `n` inputs each, all in the kernel's
/// compute dtype (output in its output dtype).
///
/// # Safety
/// `out` is valid for `n` writes and each `inputs[i]` for `n` reads of the right types;
/// `inputs.len()` is the op's arity; `params.len()` is the op's parameter count.
pub type MapFn = unsafe fn(out: *mut u8, inputs: &[*const u8], n: usize, params: &[Scalar]);

/// A generated elementwise kernel for one dtype on the CPU.
#[derive(Debug, Clone, Copy)]
pub struct MapKernel {
    /// Dtype of the contiguous input blocks (f32 for f16/bf16 rows).
    pub compute: DType,
    /// Dtype of the output block (`compute`, or `Bool` for comparisons).
    pub output: DType,
    /// The block function.
    pub func: MapFn,
}

/// A generated elementwise kernel for one dtype on CUDA: a `__device__` function in CUDA C.
#[derive(Debug, Clone, Copy)]
pub struct CudaMapKernel {
    /// Dtype the body computes in (f32 for f16/bf16 rows, like the CPU).
    pub compute: DType,
    /// Dtype of the result.
    pub output: DType,
    /// Name of the `__device__` function in `source`.
    pub function: &'static str,
    /// CUDA C source of the function: `OUT f(IN a, IN b, PARAM p0, ...)`.
    pub source: &'static str,
}

/// The kernel in one slot.
#[derive(Debug, Clone, Copy)]
pub enum Kernel {
    /// Strided copy/cast into this row's dtype.
    Copy(CopyFn),
    /// Fill with a scalar.
    Fill(FillFn),
    /// CPU elementwise block kernel.
    Map(MapKernel),
    /// CUDA elementwise device function.
    CudaMap(CudaMapKernel),
}

/// What an op is, independent of dtype and device.
#[derive(Debug)]
pub struct OpSpec {
    /// Public name (`"add"`).
    pub name: &'static str,
    /// Number of tensor inputs (1..=3).
    pub arity: usize,
    /// Names of the runtime scalar parameters.
    pub params: &'static [&'static str],
    /// True when the result is `Bool` (comparisons).
    pub bool_output: bool,
    /// True when the body needs floats: integer/bool inputs compute in f32 (as PyTorch).
    pub float_only: bool,
    /// One-line description.
    pub doc: &'static str,
    /// Where the op is defined, `module::path (file.rs:line)`, for error messages (two ops
    /// registered under one name are named by it).
    pub defined_at: &'static str,
}

/// The copy/cast op behind `Tensor::copy_`, `contiguous`, `to_dtype` and `to_device`:
/// a strided copy into the destination with broadcasting and any dtype pair.
pub static COPY_SPEC: OpSpec = OpSpec {
    name: "copy",
    arity: 1,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "strided copy into the destination, casting with Rust `as` rules",
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
};

/// The fill op behind `Tensor::fill_`, `zeros`, `ones`, `full`.
pub static FILL_SPEC: OpSpec = OpSpec {
    name: "fill",
    arity: 0,
    params: &["value"],
    bool_output: false,
    float_only: false,
    doc: "writes a scalar (cast with Rust `as` rules) into every element",
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
};

/// One registered kernel.
#[derive(Debug)]
pub struct KernelRow {
    /// The op.
    pub op: &'static OpSpec,
    /// First dispatch key: device kind...
    pub device: DeviceKind,
    /// ...and layout.
    pub layout: Layout,
    /// Second dispatch key: the dtype of the inputs (after promotion).
    pub dtype: DType,
    /// The kernel.
    pub kernel: Kernel,
}

inventory::collect!(KernelRow);

/// The kernels of one (op, device kind, layout), one slot per dtype.
#[derive(Debug, Clone, Copy)]
pub struct RowSet {
    /// The op.
    pub op: &'static OpSpec,
    slots: [Option<&'static KernelRow>; 10],
}

impl RowSet {
    /// The kernel for `dtype`, if any.
    pub fn get(&self, dtype: DType) -> Option<&'static KernelRow> {
        self.slots[dtype as usize]
    }
    /// The dtypes with a kernel, in promotion order.
    pub fn dtypes(&self) -> Vec<DType> {
        DType::ALL.into_iter().filter(|&d| self.get(d).is_some()).collect()
    }
}

/// Every registered kernel, keyed by (op, device kind, layout) then dtype.
///
/// ```
/// let reg = tensor_core::registry();
/// for (op, device, layout, dtypes) in reg.entries() {
///     assert!(!dtypes.is_empty(), "{op} {device} {layout:?}");
/// }
/// ```
#[derive(Debug, Default)]
pub struct Registry {
    /// op name → its row sets per (device kind, layout), sorted: the hot path's lookup,
    /// one FNV hash of the name and a scan of a few entries (no string comparisons in a
    /// tree).
    by_name: HashMap<&'static str, Vec<(DeviceKind, Layout, RowSet)>, FnvBuild>,
    /// Names claimed by two different op definitions (two `OpSpec`s): every lookup of
    /// such a name is an [`Error::DuplicateOp`] naming both, never one picked by link order.
    duplicates: HashMap<&'static str, (&'static OpSpec, &'static OpSpec), FnvBuild>,
}

/// Builds [`Fnv1a`] hashers.
type FnvBuild = BuildHasherDefault<Fnv1a>;

/// FNV-1a: a fast hash for the short op names of the by-name index (no DoS concern: the
/// keys are the registered names).
#[derive(Debug, Clone, Copy)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Registry {
    fn build() -> Registry {
        let mut rows: BTreeMap<(&'static str, DeviceKind, Layout), RowSet> = BTreeMap::new();
        let mut specs: HashMap<&'static str, &'static OpSpec, FnvBuild> = HashMap::default();
        let mut reg = Registry::default();
        for row in inventory::iter::<KernelRow> {
            let first = *specs.entry(row.op.name).or_insert(row.op);
            if !std::ptr::eq(first, row.op) {
                // Two definitions share the name: remember them (in a stable order).
                let pair = if first.defined_at <= row.op.defined_at { (first, row.op) } else { (row.op, first) };
                reg.duplicates.entry(row.op.name).or_insert(pair);
                continue;
            }
            let set =
                rows.entry((row.op.name, row.device, row.layout)).or_insert(RowSet { op: row.op, slots: [None; 10] });
            // One definition registering a dtype twice keeps its first row.
            set.slots[row.dtype as usize].get_or_insert(row);
        }
        for ((name, device, layout), set) in rows {
            reg.by_name.entry(name).or_default().push((device, layout, set));
        }
        reg
    }

    /// The row set for (op, device kind, layout).
    pub fn row_set(&self, op: &str, device: DeviceKind, layout: Layout) -> Option<&RowSet> {
        self.by_name.get(op)?.iter().find(|(d, l, _)| *d == device && *l == layout).map(|(_, _, s)| s)
    }

    /// Finds the kernel or says precisely what exists instead. A name that two op
    /// definitions registered is an [`Error::DuplicateOp`] naming both.
    pub fn lookup(&self, op: &str, device: Device, layout: Layout, dtype: DType) -> Result<&'static KernelRow> {
        if let Some(err) = self.duplicate_error(op) {
            return Err(err);
        }
        let no_kernel = |supported: String| Error::NoKernel { op: op.to_string(), device, layout, dtype, supported };
        match self.row_set(op, device.kind(), layout) {
            Some(set) => set
                .get(dtype)
                .ok_or_else(|| no_kernel(set.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", "))),
            None => {
                let elsewhere: Vec<String> =
                    self.by_name.get(op).into_iter().flatten().map(|(d, l, _)| format!("{d}/{l:?}")).collect();
                Err(no_kernel(if elsewhere.is_empty() {
                    "none (unknown op)".to_string()
                } else {
                    format!("none here; the op exists for {}", elsewhere.join(", "))
                }))
            }
        }
    }

    /// The spec of a registered op (`None` when unknown or defined twice; see
    /// [`Registry::duplicates`]).
    pub fn op(&self, name: &str) -> Option<&'static OpSpec> {
        if self.duplicates.contains_key(name) {
            return None;
        }
        self.by_name.get(name)?.first().map(|(_, _, s)| s.op)
    }

    /// Every name registered by two different op definitions, with two of them, sorted.
    ///
    /// ```
    /// assert!(tensor_core::registry().duplicates().is_empty());
    /// ```
    pub fn duplicates(&self) -> Vec<(&'static str, &'static OpSpec, &'static OpSpec)> {
        let mut all: Vec<_> = self.duplicates.iter().map(|(&n, &(a, b))| (n, a, b)).collect();
        all.sort_by_key(|d| d.0);
        all
    }

    /// The error for a lookup of `op` when two definitions claim that name.
    fn duplicate_error(&self, op: &str) -> Option<Error> {
        if self.duplicates.is_empty() {
            return None;
        }
        let (&name, &(a, b)) = self.duplicates.get_key_value(op)?;
        Some(Error::DuplicateOp { op: name, first: a.defined_at, second: b.defined_at })
    }

    /// Every (op, device kind, layout, dtypes) row, sorted.
    pub fn entries(&self) -> Vec<(&'static str, DeviceKind, Layout, Vec<DType>)> {
        let mut all: Vec<_> = self
            .by_name
            .iter()
            .flat_map(|(&o, sets)| sets.iter().map(move |(d, l, s)| (o, *d, *l, s.dtypes())))
            .collect();
        all.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        all
    }
}

/// The process-wide registry, built at first use.
pub fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(Registry::build)
}
