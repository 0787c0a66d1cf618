//! The seam between the core and a backend: a kernel is any value implementing
//! [`KernelImpl`]; the core hands it a [`PreparedCall`] and never names its kind. A backend
//! crate defines its own kernel kinds (a CPU block kernel, a CUDA device function, a copy
//! engine...) and registers rows holding them, without editing anything here.

use crate::registry::OpSpec;
use crate::{DType, Device, Result, Scalar};

/// A raw strided operand handed to a kernel: `ptr` already points at element `[0, 0, ...]`.
/// The caller holds the storage lock for the duration of the kernel call.
#[derive(Debug, Clone, Copy)]
pub struct RawTensor<'a> {
    /// Address of the first logical element (a device address for device memory).
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

/// One call, ready to run: operands locked, checked and laid out on one canonical plan.
///
/// Every operand has the same `shape`, the canonical iteration shape
/// ([`crate::iter::IterPlan`]): size-1 dims dropped, dims ordered by the output's memory
/// order (outermost first), coalesced where every operand is contiguous across them.
/// Broadcast inputs have stride 0; a dim along which an *output* has stride 0 is a reduced
/// dim.
///
/// # Contract (what [`KernelImpl::run`] may assume)
/// Every operand's storage is locked for the whole call (outputs exclusively); every
/// reachable element lies inside its storage; outputs have no internal overlap; inputs
/// either do not overlap an output or alias it exactly; all operands are on one device.
#[derive(Debug)]
pub struct PreparedCall<'a> {
    /// The op.
    pub op: &'static OpSpec,
    /// The outputs (one for maps, copies and fills).
    pub outputs: &'a [RawTensor<'a>],
    /// The inputs (none for a fill).
    pub inputs: &'a [RawTensor<'a>],
    /// The op's scalar params (a fill's value).
    pub params: &'a [Scalar],
    /// The kind-specific data (reductions, fused chains); [`CallExtra::None`] for maps,
    /// copies and fills. Read it through [`PreparedCall::index_strides`] and
    /// [`PreparedCall::fused`].
    pub extra: CallExtra<'a>,
}

/// The one slot of a [`PreparedCall`] for what only some kinds of call carry: a new kind or
/// layout adds a variant (and an accessor on [`PreparedCall`]) here, not a field.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub enum CallExtra<'a> {
    /// Nothing (maps, copies, fills).
    #[default]
    None,
    /// A reduction.
    Reduce {
        /// Per plan dim, the step of the element's logical index along the reduced dims
        /// (row-major over the reduced dims in the input's logical order; 0 on kept dims),
        /// so a fold that sees the index sees the same index whatever the memory order.
        index_strides: &'a [isize],
    },
    /// A chain for the `"fused"` runner rows (see [`crate::call::fused`]); a chain ending
    /// in a reduction carries that reduction's plan (and so its index steps).
    Fused(&'a crate::call::fused::FusedCall<'a>),
    /// A map or copy with quantized operands: per operand (the output first, then the
    /// inputs) the arithmetic of its quantizer, `None` for a plain one. Inputs are
    /// dequantized as they are loaded, the output quantized as it is stored (read with
    /// [`PreparedCall::quantized`]). A kernel that cannot honour it must refuse the call.
    Quantized(&'a crate::quant::OperandAffines),
}

impl<'a> PreparedCall<'a> {
    /// For reductions (eager, or ending a fused chain): the logical-index steps of
    /// [`CallExtra::Reduce`]; empty for every other call.
    pub fn index_strides(&self) -> &'a [isize] {
        match self.extra {
            CallExtra::Reduce { index_strides } => index_strides,
            CallExtra::Fused(f) => f.reduce.map_or(&[], |r| &r.plan.index),
            CallExtra::None | CallExtra::Quantized(_) => &[],
        }
    }

    /// For a call with quantized operands: per operand (output first) its quantizer's
    /// arithmetic; `None` for every other call.
    pub fn quantized(&self) -> Option<&'a crate::quant::OperandAffines> {
        match self.extra {
            CallExtra::Quantized(q) => Some(q),
            _ => None,
        }
    }

    /// For the `"fused"` runner rows: the chain; `None` for every other call.
    pub fn fused(&self) -> Option<&'a crate::call::fused::FusedCall<'a>> {
        match self.extra {
            CallExtra::Fused(f) => Some(f),
            _ => None,
        }
    }
}

/// A kernel of some backend's kind, as a registry row holds it.
pub trait KernelImpl: Send + Sync + std::fmt::Debug {
    /// A short name of the kind ("copy", "fill", "cpu-map", "cuda-map", ...), for messages.
    fn kind(&self) -> &'static str;
    /// Runs the kernel.
    ///
    /// # Safety
    /// `call` satisfies the [`PreparedCall`] contract.
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()>;
    /// The kernel as `Any`, for code that knows its concrete kind (tests, tools).
    fn as_any(&self) -> &dyn std::any::Any;
    /// When two rows fill one slot (op, device kind, layout, dtype), the higher priority
    /// wins. Backends use 0; the core's reference kernels use [`REFERENCE_PRIORITY`].
    fn priority(&self) -> i32 {
        0
    }
    /// Fused-chain runners: the most leaf tensors one run takes. A longer chain runs node by
    /// node through the eager call path (the same answer, bit for bit).
    fn max_leaves(&self) -> usize {
        usize::MAX
    }
    /// Row kernels (the fused softmax rows): the longest row, in elements, one run takes.
    /// A caller with longer rows takes another path (softmax: its log-sum-exp reduction).
    fn max_row_len(&self) -> usize {
        usize::MAX
    }
    /// Map kernels that dequantize/quantize operands as [`CallExtra::Quantized`] asks. The
    /// call path hands quantized operands only to kernels that say so (others: an error
    /// naming the kind and device, never raw integers taken for values).
    fn takes_quantized(&self) -> bool {
        false
    }
}

/// The priority of the core's reference kernels: any backend row replaces them.
pub const REFERENCE_PRIORITY: i32 = -100;

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

/// A copy/cast engine of any backend as a kernel: `outputs[0] ← inputs[0]`.
#[derive(Debug)]
pub struct CopyKernel {
    /// The kind's name (e.g. `"cpu-copy"`).
    pub kind: &'static str,
    /// The engine.
    pub func: CopyFn,
    /// Its [`KernelImpl::priority`] (0 for a backend, [`REFERENCE_PRIORITY`] for the core's).
    pub priority: i32,
}

/// A fill engine of any backend as a kernel: `outputs[0] ← params[0]`.
#[derive(Debug)]
pub struct FillKernel {
    /// The kind's name (e.g. `"cpu-fill"`).
    pub kind: &'static str,
    /// The engine.
    pub func: FillFn,
    /// Its [`KernelImpl::priority`] (0 for a backend, [`REFERENCE_PRIORITY`] for the core's).
    pub priority: i32,
}

fn arity_error(kind: &str, call: &PreparedCall<'_>) -> crate::Error {
    crate::Error::invalid(
        call.op.name,
        format!(
            "a {kind} kernel takes one output and one {} (got {} outputs, {} inputs, {} params)",
            if kind.ends_with("copy") { "input" } else { "param" },
            call.outputs.len(),
            call.inputs.len(),
            call.params.len()
        ),
    )
}

impl KernelImpl for CopyKernel {
    fn kind(&self) -> &'static str {
        self.kind
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        match (call.outputs, call.inputs) {
            // SAFETY: the PreparedCall contract is the CopyFn contract.
            ([dst], [src]) => unsafe { (self.func)(dst, src) },
            _ => Err(arity_error(self.kind, call)),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn priority(&self) -> i32 {
        self.priority
    }
}

impl KernelImpl for FillKernel {
    fn kind(&self) -> &'static str {
        self.kind
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        match (call.outputs, call.params) {
            // SAFETY: the PreparedCall contract is the FillFn contract.
            ([dst], [value]) => unsafe { (self.func)(dst, *value) },
            _ => Err(arity_error(self.kind, call)),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn priority(&self) -> i32 {
        self.priority
    }
}

/// Registers a backend's copy/cast and fill engines as the `"copy"` and `"fill"` rows of
/// one device kind, for every dtype: `register_copy_fill!(Cpu, "cpu", copy_fn, fill_fn);`
/// (kinds `"cpu-copy"` / `"cpu-fill"`).
#[macro_export]
macro_rules! register_copy_fill {
    ($device:ident, $prefix:literal, $copy:path, $fill:path) => {
        $crate::for_each_dtype!($crate::register_copy_fill; @each $device, $prefix, $copy, $fill;);
    };
    (@each $device:ident, $prefix:literal, $copy:path, $fill:path; $($d:ident),*) => { $(
        $crate::inventory::submit! {
            $crate::registry::KernelRow {
                op: &$crate::registry::COPY_SPEC,
                device: $crate::DeviceKind::$device,
                layout: $crate::Layout::Strided,
                dtype: $crate::DType::$d,
                kernel: &$crate::registry::CopyKernel { kind: concat!($prefix, "-copy"), func: $copy, priority: 0 },
            }
        }
        $crate::inventory::submit! {
            $crate::registry::KernelRow {
                op: &$crate::registry::FILL_SPEC,
                device: $crate::DeviceKind::$device,
                layout: $crate::Layout::Strided,
                dtype: $crate::DType::$d,
                kernel: &$crate::registry::FillKernel { kind: concat!($prefix, "-fill"), func: $fill, priority: 0 },
            }
        }
    )* };
}
