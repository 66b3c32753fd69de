//! Links the shared library with `-z nodelete` on ELF systems, so that
//! `dlclose` never unloads it. The library keeps per-process state that
//! must outlive whoever loaded it: `pthread_atfork` handlers, the
//! handles of `shmetrics_store_open_persistent`, and the mapped stores of
//! handles never closed. PHP's `FFI::cdef` unloads its library at the
//! end of every request; without this flag a php-fpm worker would map its
//! store and claim a writer slot anew on each request.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" | "illumos"
    ) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
