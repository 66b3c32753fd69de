//! The napi-rs build setup: links the addon as Node expects.

fn main() {
    napi_build::setup();
}
