//! Linker scripts of the bare-metal image: aarch64-rt's `image.ld` (it
//! puts it on the search path) and this board's `memory.ld`. Nothing for
//! host builds.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "aarch64-unknown-none" {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-search={dir}");
        println!("cargo:rustc-link-arg-bins=-Timage.ld");
        println!("cargo:rustc-link-arg-bins=-Tmemory.ld");
    }
    println!("cargo:rerun-if-changed=memory.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
