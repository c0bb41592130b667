//! `cargo xtask hdl synth`: `yosys synth_xilinx` of each block for the two
//! boards' FPGA families, the resource table parsed from `stat`, and the
//! cells on each block's longest path between registers (`ltp` over every
//! cell but the flip-flops and block RAMs: `-noff` alone does not know the
//! Xilinx FD* primitives, and a RAMB's ports are registered): a count of
//! logic levels, not a timing analysis (no vendor timing here).
//!
//! Device capacities (Xilinx product tables, DS190 Zynq-7000 and DS891
//! Zynq UltraScale+): XC7Z045 (Cosmos+) 218,600 LUTs, 437,200 FFs, 900
//! DSP48E1, 545 BRAM36; ZU17EG (Daisyplus) 423,360 LUTs, 846,720 FFs,
//! 1,590 DSP48E2, 796 BRAM36. (522,720 LUTs, sometimes quoted for the
//! ZU17EG, is the ZU19EG.) These come from the product tables, not from
//! yosys; yosys only counts cells.

use std::path::Path;
use std::process::Command;

/// A target family: yosys `-family`, board, device and its capacity.
struct Family {
    family: &'static str,
    device: &'static str,
    luts: u64,
    ffs: u64,
    dsps: u64,
    bram36: u64,
}

const FAMILIES: [Family; 2] = [
    Family {
        family: "xc7",
        device: "XC7Z045 (Cosmos+)",
        luts: 218_600,
        ffs: 437_200,
        dsps: 900,
        bram36: 545,
    },
    Family {
        family: "xcup",
        device: "ZU17EG (Daisyplus)",
        luts: 423_360,
        ffs: 846_720,
        dsps: 1_590,
        bram36: 796,
    },
];

/// Cell counts of one synthesized block.
#[derive(Debug, Default, PartialEq, Eq)]
struct Resources {
    lut: u64,
    lutram: u64,
    ff: u64,
    carry: u64,
    dsp: u64,
    /// RAMB18 halves (a RAMB36 counts 2).
    bram18: u64,
}

/// Parses the cell list of a flattened design's yosys `stat`.
fn parse_stat(stat: &str) -> Resources {
    let mut r = Resources::default();
    for line in stat.lines() {
        let mut f = line.split_whitespace();
        let (Some(cell), Some(n), None) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match cell {
            c if c.starts_with("LUT") => r.lut += n,
            c if c.starts_with("RAM32") || c.starts_with("RAM64") || c.starts_with("RAM128") => {
                r.lutram += n
            }
            c if c.starts_with("RAM256") || c.starts_with("SRL") => r.lutram += n,
            c if c.starts_with("FD") => r.ff += n,
            c if c.starts_with("CARRY") => r.carry += n,
            c if c.starts_with("DSP48") => r.dsp += n,
            c if c.starts_with("RAMB18") => r.bram18 += n,
            c if c.starts_with("RAMB36") => r.bram18 += 2 * n,
            _ => {}
        }
    }
    r
}

fn pct(n: u64, of: u64) -> String {
    format!("{:.2}%", n as f64 * 100.0 / of as f64)
}

/// The cells on the longest combinational path (between registers) of a
/// synthesized block: yosys `ltp` without the flip-flops, its nodes
/// sorted by the cell they pass through. A logic-level estimate, not a
/// timing analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Levels {
    lut: u64,
    /// MUXF7/MUXF8: a wide function's second and third stage.
    muxf: u64,
    /// CARRY4 (7 series) or CARRY8 (UltraScale+) cells.
    carry4: u64,
    /// DSP48 slices on the path: those without a multiplier or output
    /// register (with one, a DSP48 ends a path like a flip-flop).
    dsp: u64,
    /// Other nodes (LUT RAM, shift registers, wiring cells).
    other: u64,
}

/// The clock the engine is meant to run at (InstInfer's, on Daisyplus).
const TARGET_MHZ: f64 = 285.0;

/// A rough delay of a path on the 7 series at speed grade −2, from its
/// cell counts: an estimate to see which blocks need register stages, not
/// a timing analysis. The figures are typical values recalled from Xilinx
/// DS191 and post-route reports, not checked here: 0.6 ns for the
/// registers at both ends (clock to out, setup), 0.45 ns per LUT with its
/// net, 0.3 ns per MUXF7/8, 0.5 ns into a carry chain and 0.12 ns per
/// further CARRY4, 3.0 ns through a DSP48's multiplier and adder without
/// its internal pipeline registers.
fn estimate_ns(l: &Levels) -> f64 {
    let carry = if l.carry4 == 0 {
        0.0
    } else {
        0.5 + 0.12 * (l.carry4 - 1) as f64
    };
    0.6 + 0.45 * (l.lut + l.other) as f64 + 0.3 * l.muxf as f64 + carry + 3.0 * l.dsp as f64
}

/// Counts the cells of `ltp`'s path listing: `luts`, `muxes`, `carries`
/// and `dsps` are `select -list` outputs (`module/cell` per line).
fn parse_levels(ltp: &str, luts: &str, muxes: &str, carries: &str, dsps: &str) -> Levels {
    let names = |list: &str| -> std::collections::HashSet<String> {
        list.lines()
            .filter_map(|l| l.split_once('/').map(|(_, c)| c.trim().to_string()))
            .collect()
    };
    let (luts, muxes, carries, dsps) = (names(luts), names(muxes), names(carries), names(dsps));
    let mut r = Levels::default();
    let Some(at) = ltp.find("Longest topological path") else {
        return r;
    };
    for line in ltp[at..].lines().skip(1) {
        let Some(cell) = line
            .trim_end()
            .strip_suffix(')')
            .and_then(|l| l.rsplit_once("(via "))
            .map(|(_, c)| c)
        else {
            continue;
        };
        if luts.contains(cell) {
            r.lut += 1;
        } else if muxes.contains(cell) {
            r.muxf += 1;
        } else if carries.contains(cell) {
            r.carry4 += 1;
        } else if dsps.contains(cell) {
            r.dsp += 1;
        } else {
            r.other += 1;
        }
    }
    r
}

fn synth_one(file: &Path, block: &str, family: &str) -> Result<(Resources, Levels), String> {
    let stat = file.with_extension(format!("{family}.stat.txt"));
    let ltp = file.with_extension(format!("{family}.ltp.txt"));
    let luts = file.with_extension(format!("{family}.luts.txt"));
    let muxes = file.with_extension(format!("{family}.muxf.txt"));
    let carries = file.with_extension(format!("{family}.carry.txt"));
    let dsps = file.with_extension(format!("{family}.dsp.txt"));
    // No I/O buffers (a block's ports are wires inside the top), and the
    // path leaves out flip-flops, block RAMs, DSP48s with an M or P
    // register (registered ports) and the clock buffer; a DSP48 without
    // either stays on the path as combinational logic.
    let script = format!(
        "read_verilog {}; synth_xilinx -flatten -noiopad -family {family} -top {block}; \
         tee -q -o {} stat; \
         tee -q -o {} ltp -noff * t:FD* %d t:RAMB* %d t:BUFG* %d \
         t:DSP48* r:MREG!=0 %i %d t:DSP48* r:PREG!=0 %i %d; \
         tee -q -o {} select -list t:LUT*; tee -q -o {} select -list t:MUXF*; \
         tee -q -o {} select -list t:CARRY*; tee -q -o {} select -list t:DSP48*",
        file.display(),
        stat.display(),
        ltp.display(),
        luts.display(),
        muxes.display(),
        carries.display(),
        dsps.display()
    );
    let log = file.with_extension(format!("{family}.yosys.log"));
    let log_file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    super::run(
        Command::new("yosys")
            .args(["-q", "-p", &script])
            .stdout(log_file),
    )?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let levels = parse_levels(
        &read(&ltp)?,
        &read(&luts)?,
        &read(&muxes)?,
        &read(&carries)?,
        &read(&dsps)?,
    );
    Ok((parse_stat(&read(&stat)?), levels))
}

/// The path estimate of a 7-series row: ns, the clock it allows, and
/// whether that reaches [`TARGET_MHZ`]; UltraScale+ rows leave it empty
/// (its cells are faster; the estimate is for the slower family).
fn timing(family: &str, l: &Levels) -> String {
    if family != "xc7" {
        return String::new();
    }
    let ns = estimate_ns(l);
    let mhz = 1000.0 / ns;
    let verdict = if mhz >= TARGET_MHZ { "meets" } else { "misses" };
    format!("{ns:.1} ns, {mhz:.0} MHz: {verdict} {TARGET_MHZ:.0}")
}

/// Synthesizes the named blocks (every block when none is named) for both
/// families and prints the table.
pub fn synth(only: &[String]) -> Result<(), String> {
    if !super::have("yosys") {
        return Err("yosys not found (apt install yosys)".into());
    }
    let files = super::generate::verilog()?;
    let mut table = String::from(
        "| block | family | device | LUT | LUTRAM/SRL | FF | CARRY | DSP | BRAM36 | LUT % | FF % | DSP % | BRAM % | path: LUT / MUXF / carry / DSP / other | path est. (xc7 −2) |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for file in &files {
        let block = file
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or("bad block file name")?;
        if !only.is_empty() && !only.iter().any(|b| b == block) {
            continue;
        }
        for fam in &FAMILIES {
            let (r, lv) = synth_one(file, block, fam.family)?;
            let bram36 = r.bram18.div_ceil(2);
            table.push_str(&format!(
                "| {block} | {} | {} | {} | {} | {} | {} | {} | {}{} | {} | {} | {} | {} | {} / {} / {} / {} / {} | {} |\n",
                fam.family,
                fam.device,
                r.lut,
                r.lutram,
                r.ff,
                r.carry,
                r.dsp,
                bram36,
                if r.bram18 % 2 == 1 { " (½)" } else { "" },
                pct(r.lut + r.lutram, fam.luts),
                pct(r.ff, fam.ffs),
                pct(r.dsp, fam.dsps),
                pct(bram36, fam.bram36),
                lv.lut,
                lv.muxf,
                lv.carry4,
                lv.dsp,
                lv.other,
                timing(fam.family, &lv),
            ));
        }
    }
    println!("{table}");
    let out = super::out_dir().join("resources.md");
    std::fs::write(&out, &table).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_cells_on_the_longest_path() {
        let ltp = "
Longest topological path in top (length=5):
    0: \\a [0]
    1: $x [1] (via $abc$1$lut_a)
    2: $y [3] (via $alu$2.slice[0].carry4)
    3: $z [0] (via $abc$1$lut_b)
    4: $w [0] (via $abc$1$lut_c.mux7)
    5: \\q.d [2] (via $mul$x.v:1$q)
";
        let luts = "top/$abc$1$lut_a\ntop/$abc$1$lut_b\ntop/$abc$1$lut_c\n";
        let muxes = "top/$abc$1$lut_c.mux7\n";
        let carries = "top/$alu$2.slice[0].carry4\n";
        let dsps = "top/$mul$x.v:1$q\n";
        let l = parse_levels(ltp, luts, muxes, carries, dsps);
        assert_eq!(
            l,
            Levels {
                lut: 2,
                muxf: 1,
                carry4: 1,
                dsp: 1,
                other: 0
            }
        );
        // 0.6 + 2 × 0.45 + 0.3 + 0.5 + 3.0.
        assert!((estimate_ns(&l) - 5.3).abs() < 1e-9);
        assert!(timing("xc7", &l).ends_with("misses 285"));
        assert_eq!(timing("xcup", &l), "");
        assert_eq!(
            parse_levels("no path", luts, muxes, carries, dsps),
            Levels::default()
        );
    }

    #[test]
    fn parses_yosys_stat_cells() {
        let stat = "
   Number of cells:               1727
     BUFG                            1
     CARRY4                         10
     DSP48E1                         3
     FDRE                          589
     FDSE                            2
     LUT3                          573
     LUT6                           71
     RAM64X1D                        4
     RAMB18E1                        1
     RAMB36E1                        2
     MUXF7                          82
";
        assert_eq!(
            parse_stat(stat),
            Resources {
                lut: 644,
                lutram: 4,
                ff: 591,
                carry: 10,
                dsp: 3,
                bram18: 5
            }
        );
    }
}
