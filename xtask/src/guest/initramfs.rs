//! The guest's initramfs: `guest-init` as `/init`, `instinfer` as
//! `/bin/instinfer` (the NVMe/TCP target), the kernel modules with the
//! order the guest loads them in (`/lib/modules/order`), and any other
//! files a boot needs.

use std::path::Path;

use super::cpio::{self, Entry};

/// The guest's programs.
pub struct Programs {
    /// `guest-init`.
    pub init: Vec<u8>,
    /// `instinfer`.
    pub instinfer: Vec<u8>,
}

/// Writes the archive to `path`: the programs, `mods` (name, contents) in
/// load order, and `extra` (path in the archive, contents).
pub fn write(
    path: &Path,
    programs: &Programs,
    mods: &[(String, Vec<u8>)],
    extra: &[(&str, &[u8])],
) -> Result<(), String> {
    let order: String = mods.iter().map(|(n, _)| format!("{n}\n")).collect();
    let names: Vec<String> = mods
        .iter()
        .map(|(n, _)| format!("lib/modules/{n}.ko"))
        .collect();
    let mut entries = vec![
        Entry::Dir("dev"),
        Entry::Dir("proc"),
        Entry::Dir("sys"),
        Entry::Dir("lib"),
        Entry::Dir("lib/modules"),
        Entry::Dir("bin"),
        Entry::Dir("tmp"),
        Entry::File("init", 0o755, &programs.init),
        Entry::File("bin/instinfer", 0o755, &programs.instinfer),
        Entry::File("lib/modules/order", 0o644, order.as_bytes()),
    ];
    for ((_, bytes), name) in mods.iter().zip(&names) {
        entries.push(Entry::File(name, 0o644, bytes));
    }
    for (name, bytes) in extra {
        entries.push(Entry::File(name, 0o644, bytes));
    }
    std::fs::write(path, cpio::archive(&entries)).map_err(|e| format!("{}: {e}", path.display()))
}

/// `mods`' names, for the log.
pub fn names(mods: &[(String, Vec<u8>)]) -> String {
    mods.iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}
