//! The CUDA C reducer of a `#[tensor_op(reduce)]` definition: a struct template over the
//! accumulate type `C` with the interface of `kernels/cuda/include/reduce.cuh` (the
//! built-ins' reducers implement the same one by hand), whose four member functions are
//! the lowered functions ([`ReduceBody`]) written by the one C emitter of map bodies
//! ([`crate::cuda`]).

use crate::cuda::{c_type_of, reduce_statements};
use crate::ir::ReduceBody;
use crate::reduce_def::ReduceDef;

/// The reducer struct's name for op `name`.
pub fn reducer_name(name: &str) -> String {
    format!("tensor_op_reduce_{name}")
}

/// The C names of each function's positional arguments (the IR's `Input`s).
const INPUTS: [&[&str]; 4] =
    [&[], &["tops_acc", "tops_x", "tops_index"], &["tops_a", "tops_b"], &["tops_acc", "tops_n"]];

/// The reducer struct template of `def`, lowered as `body`.
pub fn emit(def: &ReduceDef, body: &ReduceBody) -> String {
    let name = reducer_name(&def.name);
    let acc = c_type_of(&body.acc);
    let params: Vec<(String, crate::signature::ScalarTy)> =
        def.params.iter().map(|(p, t)| (format!("p_{p}"), *t)).collect();
    let mut s = format!("template <class C> struct {name} {{\n    typedef {acc} acc_t;\n");
    for (p, t) in &params {
        s += &format!("    {} {p};\n", t.c_type());
    }
    let inits: Vec<String> =
        params.iter().enumerate().map(|(i, (p, t))| format!("{p}(({})p[{i}])", t.c_type())).collect();
    let init = if inits.is_empty() { String::new() } else { format!(" : {}", inits.join(", ")) };
    s += &format!("    __device__ __forceinline__ explicit {name}(const tops_param* p){init} {{ (void)p; }}\n");
    let function = |k: usize, convert: &str| {
        let inputs: Vec<String> = INPUTS[k].iter().map(|i| i.to_string()).collect();
        let unused: String = inputs.iter().map(|i| format!("    (void){i};\n")).collect();
        let callee = |c: usize| format!("{}<C>::call", crate::reduce_compose::dispatcher(&name, c));
        let stmts = reduce_statements(&body.fns[k], &body.locals, &inputs, &params, &callee, convert);
        format!("{unused}{stmts}")
    };
    s += &format!(
        "    __device__ __forceinline__ acc_t identity() const {{\n{}    }}\n",
        function(0, "tops_conv<acc_t>(")
    );
    s += &format!(
        "    template <class I> __device__ __forceinline__ acc_t fold(acc_t tops_acc, I tops_x_in, long long tops_index) \
         const {{\n    const C tops_x = tops_cast<C>(tops_x_in);\n{}    }}\n",
        function(1, "tops_conv<acc_t>(")
    );
    s += &format!(
        "    __device__ __forceinline__ acc_t combine(acc_t tops_a, acc_t tops_b) const {{\n{}    }}\n",
        function(2, "tops_conv<acc_t>(")
    );
    s += &format!(
        "    template <class O> __device__ __forceinline__ O finish(acc_t tops_acc, long long tops_n) const {{\n{}    }}\n}};\n",
        function(3, "tops_cast<O>(")
    );
    s
}
