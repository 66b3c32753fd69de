//! The binaries under test, built once per test process with `cargo build`
//! into the running test's own target directory and profile, so that a
//! test never runs a stale binary.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::process::wait_exit;

/// The `shmetrics` binary (package `shmetrics`, the CLI).
pub fn shmetrics_bin() -> PathBuf {
    cargo_bin("shmetrics", "shmetrics")
}

/// The multi-process tests' worker binary, `shmetrics-testworker`.
pub fn testworker_bin() -> PathBuf {
    cargo_bin("shmetrics-testkit", "shmetrics-testworker")
}

/// Binary `bin` of workspace package `package`, built on first use with
/// `cargo build -p PACKAGE --bin BIN` into this test binary's target
/// directory and profile. Panics if the build fails.
pub fn cargo_bin(package: &str, bin: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, Result<PathBuf, String>>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    built
        .entry(bin.to_string())
        .or_insert_with(|| build(package, bin))
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// This test executable's profile directory (`<target>/<profile dir>`),
/// and the profile's name as `cargo --profile` takes it.
fn profile() -> Result<(PathBuf, String), String> {
    // This executable is <target>/<profile dir>/deps/<test>-<hash>.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the profile directory")?
        .to_path_buf();
    let name = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(other) => other.to_string(),
        None => return Err("odd profile directory".into()),
    };
    Ok((dir, name))
}

fn build(package: &str, bin: &str) -> Result<PathBuf, String> {
    let (profile_dir, profile) = profile()?;
    let target_dir = profile_dir
        .parent()
        .ok_or("cannot find the target directory")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let what = format!("cargo build -p {package} --bin {bin}");
    let mut child = Command::new(&cargo)
        .current_dir(&workspace)
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .arg("--profile")
        .arg(&profile)
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cargo:?} to build {bin}: {e}"))?;
    // Read on a thread so that the wait below stays bounded.
    let mut stderr = child.stderr.take().unwrap();
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = wait_exit(&mut child, Duration::from_secs(600), &what);
    let errs = errs.join().unwrap();
    if !status.success() {
        return Err(format!("{what} failed ({status}):\n{errs}"));
    }
    let path = profile_dir.join(bin);
    if !path.is_file() {
        return Err(format!("{} was not built", path.display()));
    }
    Ok(path)
}
