//! A compiled program and the resources ptxas reported for it: what the NVRTC wrapper
//! (`nvrtc`) produces and the compile cache (`cache`) stores.

/// Resources ptxas reported for one kernel (cubin compiles only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// Kernel name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of register spill stores.
    pub spill_stores: u32,
    /// Bytes of register spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame.
    pub stack: u32,
}

/// A compiled program.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The image: a cubin for `sm_XX`, NUL-terminated PTX text for `compute_XX`.
    pub image: Vec<u8>,
    /// True for a cubin.
    pub is_cubin: bool,
    /// The target architecture.
    pub arch: String,
    /// NVRTC's program log (warnings, ptxas `-v` output).
    pub log: String,
    /// Per-kernel resources parsed from the log (empty for PTX).
    pub kernels: Vec<KernelResources>,
}

impl Compiled {
    /// Rebuilds a result from its image and log (the disk cache).
    pub fn from_parts(image: Vec<u8>, arch: &str, log: String) -> Compiled {
        let kernels = parse_ptxas_log(&log);
        Compiled { image, is_cubin: arch.starts_with("sm_"), arch: arch.to_string(), log, kernels }
    }

    /// Warning lines of the log (the front end's `warning` diagnostics and ptxas warnings).
    pub fn warnings(&self) -> Vec<&str> {
        self.log.lines().filter(|l| l.contains("warning")).collect()
    }
}

/// Parses `ptxas -v` output: for each entry function, its registers, spills and stack.
pub fn parse_ptxas_log(log: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let i = line.find(what)?;
        line[..i].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty())?.parse().ok()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            out.push(KernelResources { name, ..Default::default() });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        if line.contains("bytes spill stores") {
            cur.stack = number_before(line, "bytes stack frame").unwrap_or(0);
            cur.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
            cur.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
        } else if line.contains("Used") && line.contains("registers") {
            cur.registers = number_before(line, "registers").unwrap_or(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'k_a' for 'sm_90'\n\
            ptxas info    : Function properties for k_a\n\
            \x20   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
            ptxas info    : Used 18 registers, used 0 barriers, 416 bytes cmem[0]\n\
            ptxas info    : Compiling entry function 'k_b' for 'sm_90'\n\
            ptxas info    : Function properties for k_b\n\
            \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Used 32 registers, used 1 barriers, 64 bytes smem, 400 bytes cmem[0]\n";
        let k = parse_ptxas_log(log);
        assert_eq!(k.len(), 2);
        assert_eq!(
            (k[0].name.as_str(), k[0].registers, k[0].spill_stores, k[0].spill_loads, k[0].stack),
            ("k_a", 18, 4, 12, 8)
        );
        assert_eq!((k[1].name.as_str(), k[1].registers, k[1].spill_stores), ("k_b", 32, 0));
    }
}
