//! `include/instinfer.h` is exactly what cbindgen generates from the
//! crate with `cbindgen.toml`; `INSTINFER_BLESS=1` rewrites it.

use std::path::PathBuf;

#[test]
fn header_is_generated_from_the_crate() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut text = Vec::new();
    bindings.write(&mut text);
    let text = String::from_utf8(text).expect("UTF-8 header");
    let path = dir.join("include/instinfer.h");
    if std::env::var_os("INSTINFER_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write the header");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == text,
        "{} is stale: INSTINFER_BLESS=1 cargo test -p instinfer-capi --test it header",
        path.display()
    );
    for f in [
        "instinfer_open",
        "instinfer_submit",
        "instinfer_fetch",
        "instinfer_strerror",
    ] {
        assert!(text.contains(&format!("{f}(")), "{f} in the header");
    }
}
