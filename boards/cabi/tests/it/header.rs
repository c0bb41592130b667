//! `include/instcsd.h` and the Rust side cannot drift: every function the
//! header declares is an `extern "C"` function of `src/ffi.rs` and the other
//! way round, and every numeric `#define` has the value of
//! `abi::HEADER_CONSTANTS` (which covers all of them).

use std::collections::BTreeMap;
use std::collections::BTreeSet;

fn read(rel: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The header without its comments.
fn header() -> String {
    let text = read("include/instcsd.h");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("closed comment");
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Names `instcsd_*` directly followed by `(` in `text`, outside
/// function-pointer fields (`(*name)`).
fn called_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("instcsd_") {
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let (name, after) = tail.split_at(len);
        let pointer_field = rest[..i].ends_with("(*");
        if after.trim_start().starts_with('(') && !pointer_field {
            names.insert(name.to_string());
        }
        rest = after;
    }
    names
}

#[test]
fn header_functions_are_the_rust_extern_functions() {
    let declared = called_names(&header());
    let ffi = read("src/ffi.rs");
    let defined: BTreeSet<String> = ffi
        .lines()
        .filter(|l| l.contains("extern \"C\" fn instcsd_"))
        .flat_map(called_names)
        .collect();
    assert!(declared.len() >= 5, "{declared:?}");
    assert_eq!(declared, defined, "header vs src/ffi.rs");
    for name in &defined {
        let exported = ffi.contains(&format!(
            "#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn {name}("
        )) || ffi.contains(&format!(
            "#[unsafe(no_mangle)]\npub extern \"C\" fn {name}("
        ));
        assert!(exported, "{name} is #[unsafe(no_mangle)] pub extern \"C\"");
    }
}

#[test]
fn header_constants_are_the_rust_constants() {
    let mut defines = BTreeMap::new();
    for line in header().lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(value)) = (w.next(), w.next()) else {
            continue;
        };
        let value = value.trim_start_matches('(').trim_end_matches(')');
        if let Ok(v) = value.parse::<i64>() {
            defines.insert(name.to_string(), v);
        }
    }
    let rust: BTreeMap<String, i64> = instcsd_cabi::abi::HEADER_CONSTANTS
        .iter()
        .map(|&(n, v)| (n.to_string(), v))
        .collect();
    assert_eq!(defines, rust);
}

#[test]
fn the_header_compiles_with_its_layout_asserts() {
    if !testkit::require(
        testkit::tool::runs("gcc", "--version"),
        "gcc",
        "the C header's compile check",
    ) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("instcsd-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("check.c");
    std::fs::write(
        &src,
        "#include \"instcsd.h\"\n#include <stddef.h>\n\
         _Static_assert(offsetof(instcsd_config, ram_pages) == 24, \"ram_pages\");\n\
         _Static_assert(offsetof(instcsd_config, serial) == 56, \"serial\");\n\
         _Static_assert(offsetof(instcsd_config, reserved2) == 124, \"reserved2\");\n\
         _Static_assert(offsetof(instcsd_env, panic) == 48, \"panic\");\n\
         int main(void) { return 0; }\n",
    )
    .unwrap();
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let out = std::process::Command::new("gcc")
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
            "-I",
        ])
        .arg(include)
        .arg(&src)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
