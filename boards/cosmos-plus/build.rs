//! The bare-metal image's linker script (`link.ld`: our own startup, no
//! runtime crate). Nothing for host builds.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "armv7a-none-eabi" {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-search={dir}");
        println!("cargo:rustc-link-arg-bins=-Tlink.ld");
    }
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
