//! Linker arguments of the shared library on ELF systems.
//!
//! `-soname libshmetrics.so.<major>`: the file name programs and the
//! dynamic loader look for, so that libraries of different majors (which
//! are not compatible) can be installed side by side and a program never
//! loads another major by accident. The major is the crate's.
//!
//! `-z nodelete`, so that `dlclose` never unloads it. The library keeps
//! per-process state that must outlive whoever loaded it: `pthread_atfork`
//! handlers, the handles of `shmetrics_store_open_persistent`, and the
//! mapped stores of handles never closed. PHP's `FFI::cdef` unloads its
//! library at the end of every request; without this flag a php-fpm worker
//! would map its store and claim a writer slot anew on each request.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" | "illumos"
    ) {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libshmetrics.so.{major}");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
