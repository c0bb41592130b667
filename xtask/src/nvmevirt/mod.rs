//! `cargo xtask nvmevirt build --src TARBALL`: NVMeVirt (FAST'23) built
//! with the InstCSD target, against the headers of the guest kernel that
//! `cargo xtask guest-test` boots.
//!
//! 1. The kernel's headers (`linux-headers-*-amd64`, `-common` and
//!    `linux-kbuild-*`, Debian's packages of the guest kernel) are fetched
//!    with `apt-get download` into `~/.cache/instinfer/guest/headers` and
//!    unpacked there (once).
//! 2. NVMeVirt's source tarball (an argument, or `INSTINFER_NVMEVIRT_SRC`;
//!    no registry serves it) is unpacked into `target/nvmevirt/src` and
//!    patched ([`patch`]); the target's own files
//!    (`boards/nvmevirt/target`) and the C ABI's header go beside it.
//! 3. The device core (`board-cabi`) is built for `x86_64-unknown-none`
//!    with the kernel's code model, static relocations and PLT calls, its
//!    `core` and `alloc` rebuilt the same way (`rustup run nightly`,
//!    `-Zbuild-std`): the module loader resolves none of the GOT
//!    relocations the prebuilt ones carry. `ld -r` pulls the objects the C
//!    ABI needs into one relocatable object the Kbuild links as shipped.
//! 4. `make -C <headers> M=<src> modules` with the guest kernel's gcc-12
//!    (or, with `--kernel-build DIR`, against that kernel's build
//!    directory instead); the result is `target/nvmevirt/nvmev.ko`.
//!
//! | module | owns |
//! | --- | --- |
//! | [`patch`] | the edits that add the InstCSD target to NVMeVirt's source |

mod patch;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::guest::kernel::{deb, package, run};

/// The environment variable that names NVMeVirt's source tarball.
pub const SRC_ENV: &str = "INSTINFER_NVMEVIRT_SRC";

/// The C ABI's entry points the module calls (what `ld -r` pulls in).
const ENTRY_POINTS: [&str; 5] = [
    "instcsd_abi_version",
    "instcsd_strerror",
    "instcsd_create",
    "instcsd_destroy",
    "instcsd_submit",
];

/// `cargo xtask nvmevirt …`.
pub fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("build") => {
            let (mut src, mut kernel) = (None, None);
            let mut rest = args[1..].iter();
            while let Some(flag) = rest.next() {
                let value = rest.next().map(PathBuf::from).ok_or(USAGE)?;
                match flag.as_str() {
                    "--src" => src = Some(value),
                    "--kernel-build" => kernel = Some(value),
                    _ => return Err(USAGE.into()),
                }
            }
            let src = match src {
                Some(s) => s,
                None => std::env::var_os(SRC_ENV)
                    .map(PathBuf::from)
                    .ok_or(format!("no source: pass --src TARBALL or set {SRC_ENV}"))?,
            };
            let ko = build_for(&src, kernel.as_deref())?;
            println!("nvmevirt: {}", ko.display());
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

const USAGE: &str = "usage: cargo xtask nvmevirt build [--src TARBALL] [--kernel-build DIR]";

/// Where the built module lands.
pub fn module_path() -> PathBuf {
    crate::hdl::root().join("target/nvmevirt/nvmev.ko")
}

/// Builds `nvmev.ko` for the guest kernel from the tarball at `tarball`;
/// returns its path.
pub fn build(tarball: &Path) -> Result<PathBuf, String> {
    build_for(tarball, None)
}

/// [`build`] against `kernel` (a kernel's build directory, such as
/// `/lib/modules/$(uname -r)/build` on a Linux host) or, without one, the
/// guest kernel's headers.
fn build_for(tarball: &Path, kernel: Option<&Path>) -> Result<PathBuf, String> {
    if !tarball.is_file() {
        return Err(format!(
            "{}: no such file (NVMeVirt's source tarball)",
            tarball.display()
        ));
    }
    let headers = match kernel {
        Some(k) => k.to_path_buf(),
        None => headers()?,
    };
    let root = crate::hdl::root();
    let work = root.join("target/nvmevirt");
    let src = work.join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    }
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    run(
        Command::new("tar")
            .arg("xzf")
            .arg(tarball)
            .arg("--strip-components=1")
            .arg("-C")
            .arg(&src),
        "tar xzf (NVMeVirt's source)",
    )?;
    patch::apply(&src)?;
    for (from, name) in [
        (
            "boards/nvmevirt/target/instcsd_target.c",
            "instcsd_target.c",
        ),
        (
            "boards/nvmevirt/target/instcsd_target.h",
            "instcsd_target.h",
        ),
        ("boards/cabi/include/instcsd.h", "instcsd.h"),
    ] {
        std::fs::copy(root.join(from), src.join(name)).map_err(|e| format!("{from}: {e}"))?;
    }
    let lib = core_library(&work)?;
    let core = src.join("instcsd_core.o_shipped");
    let mut ld = Command::new("ld");
    ld.arg("-r").arg("-o").arg(&core);
    for sym in ENTRY_POINTS {
        ld.args(["-u", sym]);
    }
    run(ld.arg(&lib), "ld -r (the device core)")?;
    // modpost reads each object's command file; a shipped one has none.
    let obj = src.join("instcsd_core.o");
    std::fs::write(
        src.join(".instcsd_core.o.cmd"),
        format!(
            "cmd_{} := cp {} {}\n",
            obj.display(),
            core.display(),
            obj.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    eprintln!(
        "$ make -C {} M={} modules",
        headers.display(),
        src.display()
    );
    run(
        Command::new("make")
            .arg("-C")
            .arg(&headers)
            .arg(format!("M={}", src.display()))
            .arg("-j2")
            .arg("modules"),
        "make modules (NVMeVirt)",
    )?;
    let ko = module_path();
    std::fs::copy(src.join("nvmev.ko"), &ko).map_err(|e| format!("nvmev.ko: {e}"))?;
    Ok(ko)
}

/// The device core's static library, built for the kernel.
fn core_library(work: &Path) -> Result<PathBuf, String> {
    let target_dir = work.join("lib");
    eprintln!(
        "$ rustup run nightly cargo build -Zbuild-std=core,alloc,compiler_builtins -p board-cabi --target x86_64-unknown-none --release"
    );
    let status = Command::new("rustup")
        .args(["run", "nightly", "cargo", "build", "-q", "--release"])
        .args([
            "-Zbuild-std=core,alloc,compiler_builtins",
            "-p",
            "board-cabi",
        ])
        .args(["--target", "x86_64-unknown-none", "--target-dir"])
        .arg(&target_dir)
        .env(
            "RUSTFLAGS",
            "-C relocation-model=static -C code-model=kernel -Z plt=yes",
        )
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .current_dir(crate::hdl::root())
        .status()
        .map_err(|e| format!("rustup run nightly cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the device core for the kernel failed ({status}); it needs the nightly toolchain with rust-src (rustup component add rust-src --toolchain nightly)"
        ));
    }
    Ok(target_dir.join("x86_64-unknown-none/release/libinstcsd_cabi.a"))
}

/// The guest kernel's build headers, fetched and unpacked once; returns
/// the directory `make -C` takes.
fn headers() -> Result<PathBuf, String> {
    let image = package()?;
    let release = image
        .strip_prefix("linux-image-")
        .ok_or_else(|| format!("{image}: not a linux-image package"))?
        .to_owned();
    let abi = release
        .strip_suffix("-amd64")
        .ok_or_else(|| format!("{release}: not an amd64 kernel"))?;
    let major_minor: String = release.split('.').take(2).collect::<Vec<_>>().join(".");
    let pkgs = [
        format!("linux-headers-{release}"),
        format!("linux-headers-{abi}-common"),
        format!("linux-kbuild-{major_minor}"),
    ];
    let cache = crate::guest::cache_dir().join("headers");
    let root = cache.join("root");
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let dir = root.join(format!("usr/src/linux-headers-{release}"));
    let makefile = dir.join("Makefile");
    // The arch package's Makefile includes the common one by its
    // installed path; pointed at the unpacked copy, it marks a finished
    // unpacking (the last step), which later builds reuse.
    let common = format!("/usr/src/linux-headers-{abi}-common/Makefile");
    let here = format!(
        "include {}",
        root.join(common.trim_start_matches('/')).display()
    );
    let read =
        || std::fs::read_to_string(&makefile).map_err(|e| format!("{}: {e}", makefile.display()));
    if read().is_ok_and(|t| t.contains(&here)) {
        return Ok(dir);
    }
    for pkg in &pkgs {
        let deb = deb(&cache, pkg)?;
        run(
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root),
            "dpkg-deb -x",
        )?;
    }
    let text = read()?.replace(&format!("include {common}"), &here);
    std::fs::write(&makefile, text).map_err(|e| format!("{}: {e}", makefile.display()))?;
    Ok(dir)
}
