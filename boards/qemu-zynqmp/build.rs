//! Linker scripts for the bare-metal image (aarch64-rt's image.ld and this
//! board's memory.ld); nothing for host builds.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "aarch64-unknown-none" {
        println!("cargo:rustc-link-arg=-Timage.ld");
        println!("cargo:rustc-link-arg=-Tmemory.ld");
        println!("cargo:rustc-link-arg=-Tdefmt.x");
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-search={dir}");
    }
    println!("cargo:rerun-if-changed=memory.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
