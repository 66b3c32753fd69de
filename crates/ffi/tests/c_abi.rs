//! The C ABI from outside Rust: `tests/c/smoke.c` built with the system C
//! compiler against the cdylib and run under valgrind; the generated
//! headers checked to be current and to compile as C and C++; and the
//! cdef loaded by PHP FFI and LuaJIT when they are installed.
//!
//! Needs `cc`, `valgrind` and the cbindgen version that `gen-header.sh`
//! pins (it prints the install command when that one is missing). The PHP and LuaJIT checks run when `php`
//! (with FFI) and `luajit` are on the PATH and are skipped otherwise, unless
//! `SHMETRICS_REQUIRE_PHP_LUAJIT=1` makes their absence a failure.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crate's directory.
fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cdylib cargo built for this test run. Cargo builds the library
/// with all its crate types into `deps`, next to the test binary (even
/// under `CARGO_TARGET_DIR`), but copies it up to `target/debug` only on
/// `cargo build`.
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let lib = exe
        .parent()
        .expect("deps directory")
        .join("libshmetrics.so");
    assert!(
        lib.exists(),
        "{} is missing; cargo test should have built it",
        lib.display()
    );
    lib
}

/// The library's SONAME, `libshmetrics.so.<major>` of the crate's version.
fn soname() -> String {
    format!("libshmetrics.so.{}", env!("CARGO_PKG_VERSION_MAJOR"))
}

/// A directory laid out as a system installs the library: the file under
/// its SONAME, which programs linked with it load, and `libshmetrics.so`,
/// which `-lshmetrics` finds when linking.
/// The directory made: `dir/lib`.
fn installed_layout(dir: &Path) -> PathBuf {
    let lib = dir.join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::os::unix::fs::symlink(cdylib(), lib.join(soname())).unwrap();
    std::os::unix::fs::symlink(soname(), lib.join("libshmetrics.so")).unwrap();
    lib
}

/// Compiles the C program `src` against the header and links it with
/// `-lshmetrics` in an installed layout under `dir`, as a user would: the
/// executable's path.
fn link_program(dir: &Path, src: &Path) -> PathBuf {
    let lib = installed_layout(dir);
    let exe = dir.join(src.file_stem().unwrap());
    let out = run(Command::new(cc())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(crate_dir().join("include"))
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg("-lshmetrics")
        .arg(format!("-Wl,-rpath,{}", lib.display())));
    assert!(out.status.success(), "{} does not compile", src.display());
    exe
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    eprintln!(
        "$ {cmd:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn have(program: &str) -> bool {
    let flag = if program == "luajit" {
        "-v"
    } else {
        "--version"
    };
    Command::new(program)
        .arg(flag)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn optional_tool(program: &str) -> bool {
    if have(program) {
        return true;
    }
    if std::env::var_os("SHMETRICS_REQUIRE_PHP_LUAJIT").is_some_and(|v| v == "1") {
        panic!("{program} is required (SHMETRICS_REQUIRE_PHP_LUAJIT=1) but not installed");
    }
    eprintln!("skipped: {program} is not installed");
    false
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

#[test]
fn c_smoke_test_passes_under_valgrind() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = link_program(tmp.path(), &crate_dir().join("tests/c/smoke.c"));

    let out = run(Command::new("valgrind")
        .args([
            "-q",
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect,possible",
        ])
        .arg(&exe));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        out.status.success(),
        "smoke test failed under valgrind: {last}"
    );
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 "),
        "unexpected summary: {last}"
    );
}

/// The library is linked with `-soname libshmetrics.so.<major>`, and a
/// program linked against it records that name, not the unversioned one.
#[test]
fn the_library_has_a_soname_with_its_major() {
    let out = run(Command::new("readelf").arg("-d").arg(cdylib()));
    assert!(out.status.success(), "readelf -d failed");
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let expected = format!("Library soname: [{}]", soname());
    assert!(dynamic.contains(&expected), "no `{expected}` in readelf -d");

    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("v.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include \"shmetrics.h\"\n\
         int main(void) {\n\
           printf(\"%u %u\\n\", (unsigned)shmetrics_version_major(), (unsigned)SHMETRICS_VERSION_MAJOR);\n\
           return shmetrics_version_major() == SHMETRICS_VERSION_MAJOR ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    let exe = link_program(tmp.path(), &src);
    let out = run(Command::new("readelf").arg("-d").arg(&exe));
    let needed = format!("Shared library: [{}]", soname());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&needed),
        "the program does not need {}",
        soname()
    );
    let out = run(&mut Command::new(&exe));
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{major} {major}\n")
    );
    assert!(
        out.status.success(),
        "the library's major is not the header's"
    );
}

#[test]
fn generated_headers_are_current() {
    let out = run(Command::new("bash")
        .arg(crate_dir().join("gen-header.sh"))
        .arg("--check"));
    assert!(
        out.status.success(),
        "crates/ffi/include is stale or cbindgen is missing; see the output above"
    );
}

#[test]
fn header_compiles_as_c99_c23_and_cpp() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("h.c");
    std::fs::write(
        &src,
        "#include \"shmetrics.h\"\nint main(void) { return (int)SHMETRICS_OK; }\n",
    )
    .unwrap();
    let include = crate_dir().join("include");
    for std in ["-std=c99", "-std=c2x"] {
        let out = run(Command::new(cc())
            .args([
                std,
                "-Wall",
                "-Wextra",
                "-pedantic",
                "-Werror",
                "-fsyntax-only",
                "-I",
            ])
            .arg(&include)
            .arg(&src));
        assert!(
            out.status.success(),
            "shmetrics.h does not compile with {std}"
        );
    }
    if have("c++") {
        let out = run(Command::new("c++")
            .args([
                "-x",
                "c++",
                "-std=c++11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
            ])
            .arg("-I")
            .arg(&include)
            .arg(&src));
        assert!(out.status.success(), "shmetrics.h does not compile as C++");
    }
}

/// `dlclose` must not unload the library (it is linked with `-z
/// nodelete`): PHP's `FFI::cdef` unloads its library after each request,
/// and the persistent store handles must survive that.
#[test]
fn dlclose_leaves_the_library_loaded() {
    let lib = cdylib();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("dl.c");
    std::fs::write(
        &src,
        r#"#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argc;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 2; }
    if (!dlsym(h, "shmetrics_store_open_persistent")) { printf("no symbol\n"); return 3; }
    dlclose(h);
    if (!dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) { printf("unloaded by dlclose\n"); return 1; }
    printf("still loaded\n");
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("dl");
    let out = run(Command::new(cc())
        .args(["-std=c11", "-Wall", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-ldl"));
    assert!(out.status.success(), "dl.c does not compile");
    let out = run(Command::new(&exe).arg(&lib));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn script(rel: &str) -> PathBuf {
    crate_dir().join(rel)
}

fn store_path(dir: &Path) -> String {
    dir.join("store").to_str().unwrap().to_owned()
}

#[test]
fn cdef_loads_in_php_ffi() {
    if !optional_tool("php") {
        return;
    }
    let lib = cdylib();
    let tmp = tempfile::tempdir().unwrap();
    let out = run(Command::new("php")
        // FFI is on for the CLI by default (ffi.enable=preload); be explicit.
        .args(["-d", "ffi.enable=1"])
        .arg(script("tests/php/smoke.php"))
        .arg(script("include/shmetrics.cdef.h"))
        .arg(&lib)
        .arg(store_path(tmp.path())));
    assert!(out.status.success(), "the PHP FFI smoke test failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("php ok"));
}

#[test]
fn cdef_loads_in_luajit() {
    if !optional_tool("luajit") {
        return;
    }
    let lib = cdylib();
    let tmp = tempfile::tempdir().unwrap();
    let out = run(Command::new("luajit")
        .arg(script("tests/lua/smoke.lua"))
        .arg(script("include/shmetrics.cdef.h"))
        .arg(&lib)
        .arg(store_path(tmp.path())));
    assert!(out.status.success(), "the LuaJIT smoke test failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("luajit ok"));
}
