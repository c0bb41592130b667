//! The two OpenSSD boards as the flashing flow sees them: firmware crate
//! and target, FPGA part, processing-system ports, boot image layout.
//!
//! Parts, as the OpenSSD projects build for them:
//! * Daisyplus: `xczu17eg-ffvc1760-2-e` — the Daisyplus 2025.1 Vivado
//!   project (`CRZ-Technology/OpenSSD-OpenChannelSSD:
//!   DaisyPlus/2025.1/Micron_NAND/PS_LPDDR4_A/cosm-plus-sys.xpr`; its
//!   synthesis stubs say "Device : xczu17eg-ffvc1760-2-e").
//! * Cosmos+: `xc7z045ffg900-3` — the predefined Cosmos+ project
//!   (`Cosmos-OpenSSD/Cosmos-plus-OpenSSD:
//!   project/Predefined/2Ch8Way-1.0.3/OpenSSD2_2Ch8Way-1.0.3/OpenSSD2.xpr`,
//!   `<Option Name="Part" Val="xc7z045ffg900-3"/>`), speed grade 3, not
//!   the ZC706's -2.
//!
//! The engine's base addresses are the boards' memory maps'
//! (`boards/*/src/memory_map.rs`, `ENGINE`); a test keeps them in step.

/// Processing-system generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Zynq UltraScale+ MPSoC.
    ZynqMp,
    /// Zynq-7000.
    Zynq7000,
}

/// One board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// `--board` name and output directory.
    pub name: &'static str,
    /// Firmware package.
    pub package: &'static str,
    /// Firmware binary.
    pub bin: &'static str,
    /// Rust target of the firmware.
    pub target: &'static str,
    /// FPGA part.
    pub part: &'static str,
    /// PS generation.
    pub arch: Arch,
    /// VLNV pattern of the PS cell in the block design.
    pub ps_vlnv: &'static str,
    /// The PS master port the engine's slave hangs off.
    pub ps_master: &'static str,
    /// The PS's PL-to-PS interrupt input.
    pub ps_irq: &'static str,
    /// The engine's AXI base address.
    pub engine_base: u32,
    /// bootgen `-arch`.
    pub bootgen_arch: &'static str,
    /// Processor and xsct template of the first-stage boot loader.
    pub fsbl: (&'static str, &'static str),
    /// Processor and template of the PMU firmware (ZynqMP only).
    pub pmufw: Option<(&'static str, &'static str)>,
}

/// Daisyplus.
pub const DAISYPLUS: Board = Board {
    name: "daisyplus",
    package: "board-daisyplus",
    bin: "daisyplus-firmware",
    target: "aarch64-unknown-none",
    part: "xczu17eg-ffvc1760-2-e",
    arch: Arch::ZynqMp,
    ps_vlnv: "xilinx.com:ip:zynq_ultra_ps_e:*",
    ps_master: "M_AXI_HPM0_FPD",
    ps_irq: "pl_ps_irq0",
    engine_base: 0xA010_0000,
    bootgen_arch: "zynqmp",
    fsbl: ("psu_cortexa53_0", "zynqmp_fsbl"),
    pmufw: Some(("psu_pmu_0", "zynqmp_pmufw")),
};

/// Cosmos+.
pub const COSMOS_PLUS: Board = Board {
    name: "cosmos-plus",
    package: "board-cosmos-plus",
    bin: "cosmos-plus-firmware",
    target: "armv7a-none-eabi",
    part: "xc7z045ffg900-3",
    arch: Arch::Zynq7000,
    ps_vlnv: "xilinx.com:ip:processing_system7:*",
    ps_master: "M_AXI_GP0",
    ps_irq: "IRQ_F2P",
    engine_base: 0x43D0_0000,
    bootgen_arch: "zynq",
    fsbl: ("ps7_cortexa9_0", "zynq_fsbl"),
    pmufw: None,
};

/// Every board.
pub const BOARDS: [Board; 2] = [DAISYPLUS, COSMOS_PLUS];

/// The board called `name`.
pub fn by_name(name: &str) -> Option<Board> {
    BOARDS.into_iter().find(|b| b.name == name)
}

impl Board {
    /// File name of the firmware ELF in the output directory.
    pub fn elf(&self) -> String {
        format!("{}.elf", self.bin)
    }

    /// File name of the bitstream.
    pub fn bit(&self) -> String {
        format!("{}.bit", self.name)
    }

    /// File name of the exported hardware (XSA; Vivado before 2019.2
    /// writes an HDF for Zynq-7000 instead).
    pub fn xsa(&self) -> String {
        format!("{}.xsa", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_are_found_by_name() {
        assert_eq!(by_name("daisyplus"), Some(DAISYPLUS));
        assert_eq!(by_name("cosmos-plus"), Some(COSMOS_PLUS));
        assert_eq!(by_name("zcu102"), None);
    }

    /// The engine base and target here are the board crates' own.
    #[test]
    fn boards_agree_with_their_crates() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (b, dir) in [(DAISYPLUS, "daisyplus"), (COSMOS_PLUS, "cosmos-plus")] {
            let map =
                std::fs::read_to_string(root.join("boards").join(dir).join("src/memory_map.rs"))
                    .expect("memory map");
            let hex = format!("{:04X}_{:04X}", b.engine_base >> 16, b.engine_base & 0xFFFF);
            assert!(
                map.contains(&format!("pub const ENGINE: Region = Region::new(0x{hex}")),
                "{}: ENGINE at 0x{hex}",
                b.name
            );
            let manifest =
                std::fs::read_to_string(root.join("boards").join(dir).join("Cargo.toml"))
                    .expect("manifest");
            assert!(manifest.contains(&format!("name = \"{}\"", b.package)));
            assert!(manifest.contains(&format!("name = \"{}\"", b.bin)));
        }
    }
}
