//! The compile cache: in memory for the process, on disk across processes. Keys hash the
//! program source, target arch, options and NVRTC version (FNV-1a, stable across Rust
//! versions). A disk problem never fails a compile: it only loses the cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::compiled::Compiled;

/// 64-bit FNV-1a over `parts`, each followed by a 0xff separator byte.
pub fn key(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xffu8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn memory() -> &'static Mutex<HashMap<u64, Arc<Compiled>>> {
    static MEM: OnceLock<Mutex<HashMap<u64, Arc<Compiled>>>> = OnceLock::new();
    MEM.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The disk cache directory: `$TENSOR_OPS_CACHE_DIR`, else `tensor-ops-nvrtc` in the cargo
/// target dir the running binary lives in (found by its `CACHEDIR.TAG`), else in the
/// system temp dir.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TENSOR_OPS_CACHE_DIR") {
        return PathBuf::from(d);
    }
    target_dir().join("tensor-ops-nvrtc")
}

/// The cargo target dir the running binary lives in (found by its `CACHEDIR.TAG`), else the
/// system temp dir: where the compile cache and the test harnesses' builds go.
pub fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().find(|a| a.join("CACHEDIR.TAG").is_file()).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}

/// A cached result for `key`, from memory or disk.
pub fn get(key: u64, arch: &str) -> Option<Arc<Compiled>> {
    if let Some(c) = memory().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Some(c.clone());
    }
    let base = dir().join(format!("{key:016x}"));
    let image = std::fs::read(base.with_extension("img")).ok()?;
    let log = std::fs::read_to_string(base.with_extension("log")).ok()?;
    let compiled = Arc::new(Compiled::from_parts(image, arch, log));
    memory().lock().unwrap_or_else(|e| e.into_inner()).insert(key, compiled.clone());
    Some(compiled)
}

/// A name part no other writer uses: this process's id and a per-process count, so that two
/// threads building the same entry at once never write to, or rename, each other's file.
pub fn unique_suffix() -> String {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed))
}

/// Stores `compiled` under `key` in memory and (best effort, atomically) on disk.
pub fn put(key: u64, compiled: Arc<Compiled>) {
    let dir = dir();
    let base = dir.join(format!("{key:016x}"));
    let write = |ext: &str, bytes: &[u8]| -> std::io::Result<()> {
        let tmp = base.with_extension(format!("{ext}.{}.tmp", unique_suffix()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, base.with_extension(ext))
    };
    // The log goes first: `get` needs both files, and the image's rename completes the entry.
    let _ = std::fs::create_dir_all(&dir)
        .and_then(|_| write("log", compiled.log.as_bytes()))
        .and_then(|_| write("img", &compiled.image));
    memory().lock().unwrap_or_else(|e| e.into_inner()).insert(key, compiled);
}
