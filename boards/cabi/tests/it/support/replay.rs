//! Replays vector sections through [`instcsd_cabi::Instance`] in-process:
//! the same checks the C harness makes, without a C compiler.

use std::collections::HashMap;

use instcsd_cabi::config::default_identity;
use instcsd_cabi::{CommandClock, Config, DmaError, HostDma, Instance};
use proto::StatsLog;

use super::vectors::{CqeFields, Section};

const PAGE: u64 = 4096;

/// Host memory holding only what the vectors preload; anything else is
/// refused, as the simulated board refuses unmapped addresses.
#[derive(Debug, Default)]
pub struct PreloadedMemory {
    pages: HashMap<u64, Box<[u8; 4096]>>,
}

impl PreloadedMemory {
    fn load(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let a = addr + i as u64;
            let page = self
                .pages
                .entry(a & !(PAGE - 1))
                .or_insert_with(|| Box::new([0; 4096]));
            page[(a % PAGE) as usize] = *b;
        }
    }

    fn get(&self, addr: u64) -> Option<u8> {
        self.pages
            .get(&(addr & !(PAGE - 1)))
            .map(|p| p[(addr % PAGE) as usize])
    }

    fn mapped(&self, addr: u64, len: usize) -> bool {
        (0..len as u64).all(|i| self.pages.contains_key(&((addr + i) & !(PAGE - 1))))
    }
}

impl HostDma for PreloadedMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        if !self.mapped(addr, buf.len()) {
            return Err(DmaError { code: -14, addr });
        }
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.get(addr + i as u64).unwrap_or(0);
        }
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !self.mapped(addr, data.len()) {
            return Err(DmaError { code: -14, addr });
        }
        self.load(addr, data);
        Ok(())
    }
}

/// How a section replayed.
#[derive(Debug)]
pub struct Outcome {
    pub commands: usize,
    /// One line per command that did not match.
    pub mismatches: Vec<String>,
    /// The instance's statistics log after the last command.
    pub stats: StatsLog,
}

/// Replays `sec` on a fresh instance configured from its device line.
pub fn replay(sec: &Section) -> Outcome {
    let d = &sec.device;
    let mut cfg = Config::new(d.page_size).expect("page size");
    cfg.ram_pages = d.ram_pages;
    cfg.identity = firmware::Identity {
        vendor_id: d.vendor_id,
        serial: d.serial,
        model: d.model,
        firmware_rev: d.firmware_rev,
    };
    assert_ne!(cfg.identity, default_identity());
    let mut inst =
        Instance::new(PreloadedMemory::default(), CommandClock::default(), &cfg).expect("config");
    let mut mismatches = Vec::new();
    for (n, r) in sec.records.iter().enumerate() {
        let mem = inst.board_mut().host.dma_mut();
        for (a, b) in &r.pre {
            mem.load(*a, b);
        }
        let got = CqeFields::of(&inst.submit(r.qid, &r.sqe));
        if got != r.cqe {
            mismatches.push(format!("command {n}: CQE {got:x?}, expected {:x?}", r.cqe));
        }
        let mem = inst.board_mut().host.dma_mut();
        for (a, b) in &r.post {
            let differs = b
                .iter()
                .enumerate()
                .position(|(i, &x)| mem.get(a + i as u64) != Some(x));
            if let Some(i) = differs {
                mismatches.push(format!(
                    "command {n}: memory differs at {:#x}",
                    a + i as u64
                ));
            }
        }
    }
    Outcome {
        commands: sec.records.len(),
        mismatches,
        stats: inst.device().stats(),
    }
}
