//! Build information for `shmetrics_build_info`: the git revision and the
//! compiler version, each with a fallback (`unknown`) when it cannot be
//! found, as when building from a crates.io package or a tarball.
//! `SHMETRICS_REVISION` in the environment (a packager's) wins over git.

use std::path::Path;
use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SHMETRICS_REVISION");
    let revision = match std::env::var("SHMETRICS_REVISION") {
        Ok(r) if !r.is_empty() => r,
        _ => git_revision().unwrap_or_else(|| "unknown".into()),
    };
    println!("cargo:rustc-env=SHMETRICS_REVISION={revision}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    // "rustc 1.85.0 (4d91de4e4 2025-02-17)" -> "1.85.0".
    let version = output(&rustc, &["--version"])
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SHMETRICS_RUSTC={version}");
}

/// The short commit hash, `-dirty` when tracked files differ from it; and
/// a rerun when HEAD moves. `None` outside a git checkout.
fn git_revision() -> Option<String> {
    let hash = output("git", &["rev-parse", "--short=12", "HEAD"])?;
    for what in ["HEAD", "index"] {
        if let Some(p) = output("git", &["rev-parse", "--git-path", what]) {
            if Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    if let Some(head) = output("git", &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = output("git", &["rev-parse", "--git-path", &head]) {
            if Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"]).is_some();
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}
