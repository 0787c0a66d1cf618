//! The dispatch table: rows of (op, device kind, layout) → one kernel slot per dtype.
//!
//! Rows are submitted from any crate with [`inventory`] (the `#[tensor_op]` macro does it;
//! backends register their copy/fill engines), collected once at first use, and read
//! lock-free afterwards. The built-in ops' specs live here too (copy, fill, the fused
//! runner, the fused softmax rows, and the reductions in [`reductions`] with their one dtype
//! rule, [`ReduceOutput`]), so backends register rows against them. The call path looks rows up by the op's `&'static` [`OpSpec`]
//! ([`Registry::lookup_spec`], cached in the spec); lookups by name serve tools and tests.

mod kernel;
mod reduce_rule;
pub mod reductions;
pub mod sparse;
mod spec;

pub use kernel::{
    CallExtra, CopyFn, CopyKernel, FillFn, FillKernel, KernelImpl, PreparedCall, RawTensor, REFERENCE_PRIORITY,
};
pub use reduce_rule::{Accumulate, ReduceOutput, ReduceSpec, SparseReduce};
pub use spec::{
    OpSpec, RowCache, COPY_SPEC, DEQUANTIZE_CHANNELS_SPEC, FILL_SPEC, FUSED_SPEC, LOG_SOFTMAX_ROWS,
    QUANTIZED_COPY_SPEC, QUANTIZE_CHANNELS_SPEC, SOFTMAX_ROWS,
};

use crate::{DType, Device, DeviceKind, Error, Layout, Result};
use spec::SpecRows;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

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
    /// The kernel, of whatever kind its backend defines.
    pub kernel: &'static dyn KernelImpl,
}

inventory::collect!(KernelRow);

/// The kernels of one (op, device kind, layout), one slot per dtype.
#[derive(Debug, Clone, Copy)]
pub struct RowSet {
    /// The op.
    pub op: &'static OpSpec,
    slots: [Option<&'static KernelRow>; DType::COUNT],
}

impl RowSet {
    /// The kernel for `dtype`, if any.
    pub fn get(&self, dtype: DType) -> Option<&'static KernelRow> {
        self.slots[dtype as usize]
    }
    /// The dtypes with a kernel, in promotion order.
    pub fn dtypes(&self) -> Vec<DType> {
        DType::ALL.into_iter().chain(DType::QUANTIZED).filter(|&d| self.get(d).is_some()).collect()
    }
}

/// Every registered kernel, keyed by (op, device kind, layout) then dtype.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// let reg = tensor_ops::tensor_core::registry();
/// for (op, device, layout, dtypes) in reg.entries() {
///     assert!(!dtypes.is_empty(), "{op} {device} {layout:?}");
/// }
/// ```
#[derive(Debug, Default)]
pub struct Registry {
    /// op name → its row sets per (device kind, layout).
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
            let set = rows
                .entry((row.op.name, row.device, row.layout))
                .or_insert(RowSet { op: row.op, slots: [None; DType::COUNT] });
            // One definition registering a dtype twice keeps the row of the highest
            // priority (a backend's over the core's reference kernels), else the first.
            let slot = &mut set.slots[row.dtype as usize];
            if slot.is_none_or(|old| old.kernel.priority() < row.kernel.priority()) {
                *slot = Some(row);
            }
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

    /// Finds the kernel of the op named `op` or says precisely what exists instead. A name
    /// that two op definitions registered is an [`Error::DuplicateOp`] naming both.
    pub fn lookup(&self, op: &str, device: Device, layout: Layout, dtype: DType) -> Result<&'static KernelRow> {
        if let Some(err) = self.duplicate_error(op) {
            return Err(err);
        }
        let sets = self.by_name.get(op).map_or(&[][..], |v| v.as_slice());
        find(sets, op, device, layout, dtype)
    }

    /// [`Registry::lookup`] keyed by the op's spec: the call path's lookup. The spec's
    /// rows are gathered once, at its first call; afterwards this is a scan of the op's few
    /// (device, layout) sets and an index by dtype.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::registry::{registry, COPY_SPEC};
    /// use tensor_ops::{DType, Device, Layout};
    /// // no backend is linked into this doc test: the core's reference copy serves the row
    /// let row = registry().lookup_spec(&COPY_SPEC, Device::Cpu, Layout::Strided, DType::F32).unwrap();
    /// assert_eq!(row.kernel.kind(), "reference-copy");
    /// // and CUDA has no row at all: a NoKernel error, never a fallback
    /// assert!(registry().lookup_spec(&COPY_SPEC, Device::Cuda(0), Layout::Strided, DType::F32).is_err());
    /// ```
    pub fn lookup_spec(
        &self,
        spec: &'static OpSpec,
        device: Device,
        layout: Layout,
        dtype: DType,
    ) -> Result<&'static KernelRow> {
        let rows = spec.rows.0.get_or_init(|| self.rows_of(spec));
        if let Some(err) = &rows.duplicate {
            return Err(err.clone());
        }
        let kind = device.kind();
        if let Some((_, _, set)) = rows.sets.iter().find(|(d, l, _)| *d == kind && *l == layout)
            && let Some(row) = set.get(dtype)
        {
            return Ok(row);
        }
        find(&rows.sets, spec.name, device, layout, dtype)
    }

    /// The rows registered by `spec` itself (another spec of the same name is a duplicate).
    fn rows_of(&self, spec: &'static OpSpec) -> SpecRows {
        let sets: Vec<(DeviceKind, Layout, RowSet)> = self
            .by_name
            .get(spec.name)
            .into_iter()
            .flatten()
            .filter(|(_, _, s)| std::ptr::eq(s.op, spec))
            .copied()
            .collect();
        SpecRows { sets, duplicate: self.duplicate_error(spec.name) }
    }

    /// The spec of a registered op (`None` when unknown or defined twice; see
    /// [`Registry::duplicates`]).
    pub fn op(&self, name: &str) -> Option<&'static OpSpec> {
        if self.duplicates.contains_key(name) {
            return None;
        }
        self.by_name.get(name)?.first().map(|(_, _, s)| s.op)
    }

    /// The op registered as `name`: [`Error::DuplicateOp`] when two definitions claim it,
    /// [`Error::InvalidArgument`] (naming `op`, the caller) when none does.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let reg = tensor_ops::tensor_core::registry();
    /// assert!(reg.op_named("Expr::call", "no_such_op").unwrap_err().to_string().contains("no_such_op"));
    /// ```
    pub fn op_named(&self, op: &'static str, name: &str) -> Result<&'static OpSpec> {
        if let Some(e) = self.duplicate_error(name) {
            return Err(e);
        }
        self.op(name).ok_or_else(|| {
            Error::invalid(op, format!("no op named `{name}` is registered (the registry lists every op by name)"))
        })
    }

    /// Every name registered by two different op definitions, with two of them, sorted.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// assert!(tensor_ops::tensor_core::registry().duplicates().is_empty());
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

    /// [`Registry::entries`] without the internal steps of other ops ([`OpSpec::internal`]:
    /// the fused-chain runner, softmax's row passes): the ops a user calls.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let reg = tensor_ops::tensor_core::registry();
    /// assert!(reg.user_entries().iter().all(|(op, ..)| *op != "fused"));
    /// ```
    pub fn user_entries(&self) -> Vec<(&'static str, DeviceKind, Layout, Vec<DType>)> {
        let internal =
            |name: &str| self.by_name.get(name).is_some_and(|sets| sets.iter().any(|(_, _, s)| s.op.internal));
        self.entries().into_iter().filter(|(op, ..)| !internal(op)).collect()
    }
}

/// The row for (device, layout, dtype) among one op's `sets`, or a [`Error::NoKernel`]
/// saying what exists instead.
fn find(
    sets: &[(DeviceKind, Layout, RowSet)],
    op: &str,
    device: Device,
    layout: Layout,
    dtype: DType,
) -> Result<&'static KernelRow> {
    let no_kernel = |supported: String| Error::NoKernel { op: op.to_string(), device, layout, dtype, supported };
    match sets.iter().find(|(d, l, _)| *d == device.kind() && *l == layout) {
        Some((_, _, set)) => set
            .get(dtype)
            .ok_or_else(|| no_kernel(set.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>().join(", "))),
        None => {
            let elsewhere: Vec<String> = sets.iter().map(|(d, l, _)| format!("{d}/{l:?}")).collect();
            let hint =
                if layout == Layout::Strided { "" } else { "; convert the sparse operands with to_dense() first" };
            Err(no_kernel(if elsewhere.is_empty() {
                format!("none (unknown op, or its backend is not linked){hint}")
            } else {
                format!("none here; the op exists for {}{hint}", elsewhere.join(", "))
            }))
        }
    }
}

/// The process-wide registry, built at first use.
pub fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(Registry::build)
}
