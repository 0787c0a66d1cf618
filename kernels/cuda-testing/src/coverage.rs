//! Which kernels of a suite the NVRTC check compiles: every kernel, or a covering sample.
//!
//! Compiling every registered kernel for both checked archs takes about seven minutes of two
//! cores (2,700 kernels; `docs/performance-log.md`), most of CI's time. The kernels are
//! products — an op body × a layout template × storage dtypes, a cast pair × a layout, a
//! reducer × a pass — and a compile error, warning or spill comes from a body, a template
//! or their meeting. The covering sample compiles every *body* once (every map row, cast
//! pair, reducer × input dtype, finishing reducer) in a layout chosen by a hash of its name,
//! then adds kernels until every *template × dtype combination* is compiled at least once:
//! each map layout with each combination of storage, compute and output dtypes (quantized
//! or not) its rows use, each cast layout from and to each dtype, each reduction pass with
//! each input dtype, each accumulator → output pair and each reducer. What it leaves out is
//! a body compiled in its other layouts. Kernels that are not such products (fused chains, softmax rows, sparse steps, copies,
//! fills, transposes) are always compiled, and a suite of at most [`SMALL_SUITE`] kernels is
//! compiled whole.
//!
//! `TOPS_KERNEL_CHECK=all` compiles every kernel (the check before a release, or after a
//! change to the templates' register use).
//!
//! ```
//! use tensor_cuda_testing::coverage::{self, Coverage};
//! use tensor_kernels_cuda::codegen;
//!
//! let suite = codegen::data_movement_kernels();
//! let sample = coverage::select(&suite, Coverage::Sample);
//! assert!(sample.len() < suite.len());
//! assert!(coverage::uncovered(&suite, &sample).is_empty());
//! assert_eq!(coverage::select(&suite, Coverage::All).len(), suite.len());
//! ```

use std::collections::{HashMap, HashSet};
use tensor_kernels_cuda::codegen::KernelSpec;

/// The variable that asks for every kernel (`all`); anything else, or unset, is the sample.
pub const ENV: &str = "TOPS_KERNEL_CHECK";

/// Suites this small are compiled whole.
pub const SMALL_SUITE: usize = 96;

/// How much of a suite the check compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every kernel.
    All,
    /// Every body once and every template × dtype combination once (the module docs).
    Sample,
}

impl Coverage {
    /// `All` when [`ENV`] is `all`, else `Sample`.
    ///
    /// ```
    /// use tensor_cuda_testing::coverage::Coverage;
    /// let c = Coverage::from_env();
    /// assert!(matches!(c, Coverage::All | Coverage::Sample));
    /// ```
    pub fn from_env() -> Coverage {
        match std::env::var(ENV) {
            Ok(v) if v.eq_ignore_ascii_case("all") => Coverage::All,
            _ => Coverage::Sample,
        }
    }
}

/// What a kernel exercises: its body, and the template × dtype combinations it instantiates.
/// `None` for kernels that are always compiled.
fn facets(spec: &KernelSpec<'_>) -> Option<(String, Vec<String>)> {
    Some(match spec {
        KernelSpec::Map { func, inputs, out, layout, quant } => {
            let types = format!("{inputs:?}->{out:?} q{quant:#x} compute {:?} params {}", func.compute, func.nparams);
            (format!("map {} {types}", func.name), vec![format!("map template {layout:?} {types}")])
        }
        KernelSpec::Cast { src, dst, layout } => (
            format!("cast {src:?}->{dst:?}"),
            vec![format!("cast template {layout:?} from {src:?}"), format!("cast template {layout:?} to {dst:?}")],
        ),
        KernelSpec::Reduce { reducer, input, pass } => {
            let types = format!("{:?}->{:?}", reducer.compute, reducer.output);
            (
                format!("reduce {} {types} of {input:?}", reducer.name),
                vec![
                    format!("reduce pass {pass:?} of {input:?}"),
                    format!("reduce pass {pass:?} {types}"),
                    format!("reduce pass {pass:?} reducer {}", reducer.name),
                ],
            )
        }
        KernelSpec::ReduceFinish { reducer, wide } => {
            let types = format!("{:?}->{:?}", reducer.compute, reducer.output);
            (format!("finish {} {types}", reducer.name), vec![format!("finish wide {wide} {types}")])
        }
        KernelSpec::Fused { .. }
        | KernelSpec::FusedReduce { .. }
        | KernelSpec::Copy { .. }
        | KernelSpec::Fill { .. }
        | KernelSpec::Transpose { .. }
        | KernelSpec::SoftmaxRows { .. }
        | KernelSpec::Sparse(_) => return None,
    })
}

/// FNV-1a: a hash that is the same on every machine and toolchain.
fn stable_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The kernels of `suite` the check compiles under `coverage`, in the suite's order.
pub fn select<'a>(suite: &[KernelSpec<'a>], coverage: Coverage) -> Vec<KernelSpec<'a>> {
    if coverage == Coverage::All || suite.len() <= SMALL_SUITE {
        return suite.to_vec();
    }
    let facets: Vec<_> = suite.iter().map(facets).collect();
    // The kernels of each body, in order; the body's home is picked by its hash.
    let mut by_body: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in facets.iter().enumerate() {
        if let Some((body, _)) = f {
            by_body.entry(body).or_default().push(i);
        }
    }
    let mut chosen = vec![false; suite.len()];
    for (body, kernels) in &by_body {
        chosen[kernels[(stable_hash(body) % kernels.len() as u64) as usize]] = true;
    }
    let mut covered: HashSet<&str> = HashSet::new();
    for (i, f) in facets.iter().enumerate() {
        match f {
            None => chosen[i] = true,
            Some((_, combos)) if chosen[i] => covered.extend(combos.iter().map(String::as_str)),
            Some(_) => {}
        }
    }
    for (i, f) in facets.iter().enumerate() {
        if let Some((_, combos)) = f
            && !chosen[i]
            && combos.iter().any(|c| !covered.contains(c.as_str()))
        {
            chosen[i] = true;
            covered.extend(combos.iter().map(String::as_str));
        }
    }
    suite.iter().zip(chosen).filter(|(_, c)| *c).map(|(s, _)| s.clone()).collect()
}

/// The bodies and template × dtype combinations of `suite` that no kernel of `selected`
/// exercises, and the always-compiled kernels it lacks (each described): empty when
/// `selected` covers `suite`.
///
/// ```
/// use tensor_cuda_testing::coverage;
/// use tensor_kernels_cuda::codegen;
///
/// let suite = codegen::data_movement_kernels();
/// assert!(!coverage::uncovered(&suite, &suite[..10]).is_empty());
/// ```
pub fn uncovered(suite: &[KernelSpec<'_>], selected: &[KernelSpec<'_>]) -> Vec<String> {
    let mut have: HashSet<String> = HashSet::new();
    for s in selected {
        match facets(s) {
            Some((body, combos)) => {
                have.insert(body);
                have.extend(combos);
            }
            None => {
                have.insert(format!("{s:?}"));
            }
        }
    }
    let mut missing = Vec::new();
    for s in suite {
        let wanted = match facets(s) {
            Some((body, combos)) => std::iter::once(body).chain(combos).collect(),
            None => vec![format!("{s:?}")],
        };
        for w in wanted {
            if !have.contains(&w) {
                have.insert(w.clone());
                missing.push(w);
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples;
    use tensor_kernels_cuda::codegen;

    /// The sample functions in every layout, and every copy, cast, fill and transpose.
    fn suite(fns: &[samples::SampleFn]) -> Vec<KernelSpec<'_>> {
        let mut suite: Vec<KernelSpec<'_>> =
            fns.iter().flat_map(|f| codegen::map_kernels_for(f.func(), f.dtype, f.arity)).collect();
        suite.extend(codegen::data_movement_kernels());
        suite
    }

    #[test]
    fn the_sample_covers_every_body_and_template_combination_and_is_smaller() {
        let fns = samples::sample_functions();
        let suite = suite(&fns);
        let sample = select(&suite, Coverage::Sample);
        assert!(uncovered(&suite, &sample).is_empty());
        assert!(sample.len() * 2 < suite.len(), "{} of {}", sample.len(), suite.len());
        // every always-compiled kernel is in it, in the suite's order
        let always: Vec<_> = suite.iter().filter(|s| facets(s).is_none()).collect();
        assert!(always.iter().all(|s| sample.contains(s)));
        let positions: Vec<usize> = sample.iter().map(|s| suite.iter().position(|t| t == s).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        // the same on every run
        assert_eq!(select(&suite, Coverage::Sample), sample);
    }

    #[test]
    fn every_cast_pair_is_compiled_once_and_every_layout_meets_every_dtype() {
        let suite = codegen::data_movement_kernels();
        let sample = select(&suite, Coverage::Sample);
        let casts = |v: &[KernelSpec<'_>]| -> Vec<(String, String, String)> {
            v.iter()
                .filter_map(|s| match s {
                    KernelSpec::Cast { src, dst, layout } => {
                        Some((format!("{src:?}"), format!("{dst:?}"), format!("{layout:?}")))
                    }
                    _ => None,
                })
                .collect()
        };
        let (all, got) = (casts(&suite), casts(&sample));
        for (src, dst, _) in &all {
            assert!(got.iter().any(|(s, d, _)| s == src && d == dst), "{src} -> {dst} never compiled");
        }
        for (src, dst, layout) in &all {
            assert!(got.iter().any(|(s, _, l)| s == src && l == layout), "{layout} from {src} never compiled");
            assert!(got.iter().any(|(_, d, l)| d == dst && l == layout), "{layout} to {dst} never compiled");
        }
    }

    #[test]
    fn all_and_small_suites_are_compiled_whole() {
        let suite = codegen::data_movement_kernels();
        assert_eq!(select(&suite, Coverage::All), suite);
        let small = &suite[..SMALL_SUITE];
        assert_eq!(select(small, Coverage::Sample), small.to_vec());
        assert!(!uncovered(&suite, small).is_empty());
    }
}
