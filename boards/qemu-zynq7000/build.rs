//! The linker script of the bare-metal image; nothing for host builds.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "armv7a-none-eabi" {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg=-T{dir}/link.ld");
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
