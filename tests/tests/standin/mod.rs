//! The runner of `cuda_device.rs` (a `harness = false` test): its tests drive `Device::Cuda`
//! end to end, on a real GPU when this machine has a CUDA driver, else under the CPU-backed
//! stand-in of the driver and NVRTC (`tensor_cuda_testing::standin`): the runner builds it
//! and runs itself again with the stand-in first on the library search path, so cudarc
//! loads it by name as it loads the real driver.
//!
//! - `TENSOR_OPS_TEST_STANDIN=1` uses the stand-in even where a driver is present. The
//!   stand-in simulates two devices.
//! - Without a host C++ compiler or the CUDA headers (they come with
//!   `.ci/install-nvrtc.sh`) each test is reported as ignored with the fix — a failure under `CI`.
//! - Arguments as libtest's: name filters, `--exact`, `--list`, `--ignored`,
//!   `--include-ignored`, `--test-threads N`; the others (`--nocapture`, ...) are accepted.
//! - Tests run on two threads under the stand-in, and on [`cores`] on a real GPU, where most
//!   of their time is NVRTC building each kernel at its first launch (a lent machine's
//!   device time is short); `serial` ones (fault injection, the stand-in's checks) run alone
//!   afterwards. Under the stand-in, a check that fires during a test fails it, even when the
//!   backend did not surface the error.
//! - A run of the whole suite under the stand-in first prebuilds every registered kernel
//!   (`tensor_cuda_testing::prebuild`: a host-compiler run per 64 kernels instead of one
//!   per kernel at its first launch); a filtered run builds kernels as they launch.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tensor_core::registry::KernelRow;
use tensor_core::DeviceKind;
use tensor_cuda_testing::shim::ShimError;
use tensor_cuda_testing::standin::{self, Control};
use tensor_cuda_testing::{check, prebuild};
use tensor_kernels_cuda::cache;

/// One test.
pub struct Test {
    /// Its name (what filters match).
    pub name: &'static str,
    /// The test: panics on failure.
    pub run: fn(),
    /// Needs the stand-in (its checks or fault injection): ignored on a real GPU.
    pub standin_only: bool,
    /// Runs alone, after the others (it injects faults or expects checks to fire).
    pub serial: bool,
}

/// Where the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The CPU-backed stand-in.
    Standin,
    /// A real CUDA driver and device.
    Gpu,
    /// Neither: every test is reported as ignored, with this reason and the fix.
    Unavailable(&'static str),
}

/// As many threads as the machine has cores, two to eight: for work that is mostly NVRTC
/// building kernels (one core each), the harness's tests on a real GPU and the tests that
/// launch every op's kernels.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

/// The stand-in's controls (`None` on a real GPU).
pub fn control() -> Option<Control> {
    Control::get()
}

/// Picks the device (re-running this binary under the stand-in when needed), then runs
/// `tests` as libtest would.
pub fn main(tests: Vec<Test>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = if standin::active().is_some() {
        Mode::Standin
    } else if std::env::var_os("TENSOR_OPS_TEST_STANDIN").is_none() && standin::real_driver_present() {
        Mode::Gpu
    } else if args.iter().any(|a| a == "--list") {
        Mode::Standin // listing needs no device
    } else {
        match reexec_under_standin() {
            Ok(code) => return code,
            Err(why) => Mode::Unavailable(why),
        }
    };
    run(tests, &args, mode)
}

/// Runs this binary again under the stand-in (its exit code), or says why the tests cannot
/// run here (outside CI; under CI that is a failure).
fn reexec_under_standin() -> Result<ExitCode, &'static str> {
    let ci = std::env::var_os("CI").is_some();
    match standin::build(&cache::target_dir()) {
        Ok(s) => {
            use std::os::unix::process::CommandExt;
            let exe = match std::env::current_exe() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("cannot find this test binary to run it under the CUDA stand-in: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            // two simulated devices, for the tests of more than one
            let err = s.command(exe).args(std::env::args_os().skip(1)).env("TOPS_STANDIN_DEVICES", "2").exec();
            eprintln!("running this test binary under the CUDA stand-in failed: {err}");
            Ok(ExitCode::FAILURE)
        }
        Err(ShimError::Unavailable(why)) if !ci => {
            // The whole reason once; each test then says what it needs and the fix.
            println!("no GPU here and the CUDA stand-in cannot be built: {why}");
            Err("no GPU here and the CUDA stand-in cannot be built (see above): run .ci/install-nvrtc.sh")
        }
        Err(e) => {
            eprintln!("the CUDA stand-in is needed (no GPU here) but: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

struct Options {
    filters: Vec<String>,
    threads: Option<usize>,
    exact: bool,
    list: bool,
    ignored: bool,
    include_ignored: bool,
}

fn options(args: &[String]) -> Options {
    let mut o = Options {
        filters: Vec::new(),
        threads: None,
        exact: false,
        list: false,
        ignored: false,
        include_ignored: false,
    };
    // a thread count as libtest takes it (0 or unreadable: the default)
    let count = |v: &str| v.parse().ok().filter(|&n: &usize| n > 0);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--exact" => o.exact = true,
            "--list" => o.list = true,
            "--ignored" => o.ignored = true,
            "--include-ignored" => o.include_ignored = true,
            "--test-threads" => o.threads = it.next().and_then(|n| count(n)),
            "--color" | "--format" | "--skip" | "-Z" | "--logfile" | "--report-time" => {
                it.next();
            }
            s if s.starts_with("--test-threads=") => o.threads = count(&s["--test-threads=".len()..]),
            s if s.starts_with('-') => {}
            s => o.filters.push(s.to_string()),
        }
    }
    o
}

enum Outcome {
    Passed,
    Failed(String),
    Ignored(&'static str),
}

fn run_one(t: &Test, mode: Mode) -> Outcome {
    if let Mode::Unavailable(why) = mode {
        return Outcome::Ignored(why);
    }
    if t.standin_only && mode == Mode::Gpu {
        return Outcome::Ignored("needs the CUDA stand-in");
    }
    match catch_unwind(AssertUnwindSafe(t.run)) {
        Ok(()) => Outcome::Passed,
        Err(p) => Outcome::Failed(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

fn run(tests: Vec<Test>, args: &[String], mode: Mode) -> ExitCode {
    let o = options(args);
    let total = tests.len();
    let selected: Vec<Test> = tests
        .into_iter()
        .filter(|t| {
            o.filters.is_empty()
                || o.filters.iter().any(|f| if o.exact { t.name == f } else { t.name.contains(f.as_str()) })
        })
        .collect();
    let filtered_out = total - selected.len();
    if o.list {
        selected.iter().for_each(|t| println!("{}: test", t.name));
        return ExitCode::SUCCESS;
    }
    if o.ignored && !o.include_ignored {
        // Nothing here is #[ignore]d: the same tests run on a GPU or on the stand-in.
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; {total} filtered out"
        );
        return ExitCode::SUCCESS;
    }
    let device = match mode {
        Mode::Standin => "the CPU-backed CUDA stand-in",
        Mode::Gpu => "the CUDA device",
        Mode::Unavailable(_) => "no device (each is reported as ignored)",
    };
    println!("\nrunning {} tests on {device}", selected.len());
    let start = Instant::now();
    let control = if mode == Mode::Standin { control() } else { None };
    if mode == Mode::Standin && control.is_none() {
        eprintln!("running under the stand-in, but its controls cannot be reached (libcuda.so is not the stand-in?)");
        return ExitCode::FAILURE;
    }
    let results: Mutex<Vec<(&'static str, Outcome)>> = Mutex::new(Vec::new());
    let report = |name: &'static str, out: Outcome| {
        let tag = match &out {
            Outcome::Passed => "ok".to_string(),
            Outcome::Failed(_) => "FAILED".to_string(),
            Outcome::Ignored(why) => format!("ignored, {why}"),
        };
        println!("test {name} ... {tag}");
        let _ = std::io::stdout().flush();
        results.lock().unwrap_or_else(|e| e.into_inner()).push((name, out));
    };
    if mode == Mode::Standin && o.filters.is_empty() {
        // The whole suite launches nearly every registered kernel: built in programs of many
        // kernels first, a few dozen compiler runs instead of one per kernel.
        let prebuilt = Instant::now();
        let rows = inventory::iter::<KernelRow>.into_iter().filter(|r| r.device == DeviceKind::Cuda);
        let mut specs = check::specs_for(rows);
        specs.extend(prebuild::small_extent_variants(&specs));
        match prebuild::prebuild(&specs) {
            Ok(n) => println!("{n} registered kernels prebuilt in {:.1} s", prebuilt.elapsed().as_secs_f64()),
            Err(e) => report("(the stand-in's prebuild of the registered kernels)", Outcome::Failed(e.to_string())),
        }
    }
    // the parallel phase
    let parallel: Vec<&Test> = selected.iter().filter(|t| !t.serial).collect();
    let next = AtomicUsize::new(0);
    let threads = o.threads.unwrap_or(if mode == Mode::Gpu { cores() } else { 2 });
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = parallel.get(i) else { break };
                report(t.name, run_one(t, mode));
            });
        }
    });
    if let Some(c) = &control {
        let fired = c.take_violations();
        if !fired.is_empty() {
            report("(stand-in checks during the tests above)", Outcome::Failed(fired.join("\n")));
        }
    }
    // the serial phase: each test alone, its own checks attributed to it
    for t in selected.iter().filter(|t| t.serial) {
        // the stand-in-only tests provoke its checks and inject faults on purpose: the
        // messages they print say so
        let provokes = t.standin_only && control.is_some();
        if let (Some(c), true) = (&control, provokes) {
            c.expect_checks(true);
        }
        let mut out = run_one(t, mode);
        if let (Some(c), true) = (&control, provokes) {
            c.expect_checks(false);
        }
        if let (Some(c), Outcome::Passed) = (&control, &out) {
            let fired = c.take_violations();
            if !fired.is_empty() {
                out = Outcome::Failed(format!("stand-in checks fired:\n{}", fired.join("\n")));
            }
        }
        report(t.name, out);
    }
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let failed: Vec<&(&str, Outcome)> = results.iter().filter(|(_, o)| matches!(o, Outcome::Failed(_))).collect();
    let passed = results.iter().filter(|(_, o)| matches!(o, Outcome::Passed)).count();
    let ignored = results.iter().filter(|(_, o)| matches!(o, Outcome::Ignored(_))).count();
    if !failed.is_empty() {
        println!("\nfailures:");
        for (name, o) in &failed {
            if let Outcome::Failed(msg) = o {
                println!("\n---- {name} ----\n{msg}");
            }
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {ignored} ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        start.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}
