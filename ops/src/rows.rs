//! The registry rows of a `#[tensor_op]` definition, one macro per kernel kind, so that the
//! proc macro names no device: it hands over the kernels it generated (a CPU block kernel and
//! a CUDA C function, or a CPU reducer type and a CUDA C reducer) and these macros register a
//! row for each device tensor-ops links — the CPU always, CUDA only with the `cuda` feature
//! (through [`if_cuda`](crate::__private::if_cuda)).

/// One strided row: `op` × `device` × `dtype` → `kernel`, submitted to the registry.
#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_row {
    ($spec:expr, $device:ident, $dtype:expr, $kernel:expr) => {
        $crate::__tensor_ops_row!($spec, $device, Strided, $dtype, $kernel);
    };
    ($spec:expr, $device:ident, $layout:ident, $dtype:expr, $kernel:expr) => {
        $crate::__private::inventory::submit! {
            $crate::__private::KernelRow {
                op: $spec,
                device: $crate::__private::DeviceKind::$device,
                layout: $crate::__private::Layout::$layout,
                dtype: $dtype,
                kernel: $kernel,
            }
        }
    };
}

/// One kernel's rows under every layout an elementwise op runs on: strided, and the sparse
/// layouts (COO, CSR), whose calls run the same kernel over the stored values
/// (`call::sparse`; whether the op maps zero to zero is checked per call, with the call's
/// dtypes and params).
#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_map_layout_rows {
    ($spec:expr, $device:ident, $dtype:expr, $kernel:expr) => {
        $crate::__tensor_ops_row!($spec, $device, Strided, $dtype, $kernel);
        $crate::__tensor_ops_row!($spec, $device, SparseCoo, $dtype, $kernel);
        $crate::__tensor_ops_row!($spec, $device, SparseCsr, $dtype, $kernel);
    };
}

/// The rows of one dtype of an elementwise `#[tensor_op]`: CPU rows running `cpu` (and,
/// for the 8-bit floats, `cpu_bytes`, an `Option`, for contiguous runs in one pass) and,
/// with the `cuda` feature, CUDA rows compiling `cuda_function` from `cuda_source`, each
/// under the strided and the sparse layouts.
#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_register_map_rows {
    (
        spec: $spec:expr, dtype: $dtype:expr, compute: $compute:expr, output: $output:expr,
        cpu: $cpu:expr, cpu_bytes: $bytes:expr, cuda_function: $function:expr, cuda_source: $source:expr $(,)?
    ) => {
        $crate::__tensor_ops_map_layout_rows!(
            $spec, Cpu, $dtype,
            &$crate::__private::MapKernel { compute: $compute, output: $output, func: $cpu, bytes: $bytes }
        );
        $crate::__private::if_cuda! {
            $crate::__tensor_ops_map_layout_rows!(
                $spec, Cuda, $dtype,
                &$crate::__private::CudaMapKernel { compute: $compute, output: $output, function: $function, source: $source }
            );
        }
    };
}

/// The rows of one dtype of a `#[tensor_op(reduce)]`: a CPU row driving the `Reducer` type
/// `cpu` and, with the `cuda` feature, a CUDA row instantiating the CUDA C reducer struct
/// `cuda_reducer` of `cuda_source` for `compute`, under each of `layouts` (strided, and the
/// sparse layouts for a reduction with a sparse form: `sparse = sum|max|min`).
/// A map op's rows for a quantized dtype, on the strided layout only: the CPU block kernel
/// and the CUDA function of its f32 body; the drivers dequantize the inputs and quantize
/// the output (`CallExtra::Quantized`), in one pass through `cpu_bytes` (an `Option`) for
/// contiguous qint8/quint8 runs.
#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_register_quantized_map_rows {
    (
        spec: $spec:expr, dtype: $dtype:expr, compute: $compute:expr, output: $output:expr,
        cpu: $cpu:expr, cpu_bytes: $bytes:expr, cuda_function: $function:expr, cuda_source: $source:expr $(,)?
    ) => {
        $crate::__tensor_ops_row!(
            $spec,
            Cpu,
            Strided,
            $dtype,
            &$crate::__private::MapKernel { compute: $compute, output: $output, func: $cpu, bytes: $bytes }
        );
        $crate::__private::if_cuda! {
            $crate::__tensor_ops_row!(
                $spec,
                Cuda,
                Strided,
                $dtype,
                &$crate::__private::CudaMapKernel { compute: $compute, output: $output, function: $function, source: $source }
            );
        }
    };
}

#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_register_reduce_rows {
    (
        spec: $spec:expr, layouts: [$($layout:ident),*], dtype: $dtype:expr, compute: $compute:expr,
        output: $output:expr, cpu: $cpu:ty, cuda_reducer: $reducer:expr, cuda_source: $source:expr $(,)?
    ) => {
        $(
            $crate::__tensor_ops_row!(
                $spec, Cpu, $layout, $dtype,
                &$crate::__private::ReduceKernel {
                    func: $crate::__private::drive_reduce::<$cpu>,
                    fused: $crate::__private::drive_reduce_fused::<$cpu>,
                }
            );
        )*
        $crate::__private::if_cuda! {
            $(
                $crate::__tensor_ops_row!(
                    $spec, Cuda, $layout, $dtype,
                    &$crate::__private::CudaReduceKernel { reducer: $reducer, source: $source, compute: $compute, output: $output }
                );
            )*
        }
    };
}
