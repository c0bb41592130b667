//! The device core: one object owning the board and the core's state,
//! serving commands one at a time. Its methods are the public entry; the
//! work is done by the modules that take the state and the board apart,
//! none of which names this one.

use crate::config::DeviceConfig;
use crate::error::DeviceError;
use crate::hal::{Clock, Engine, HostInterface, Nand};
use crate::state::State;

pub use crate::dispatch::Progress;

/// The device core running on board `B`.
#[derive(Debug)]
pub struct Device<B> {
    board: B,
    state: State,
}

impl<B> Device<B>
where
    B: HostInterface + Nand + Engine + Clock,
{
    /// Starts the core on `board`.
    pub fn new(board: B, config: DeviceConfig) -> Result<Self, DeviceError> {
        log_info!(
            "device core up: {=u32} sequences, {=u32} B pages",
            config.max_sequences,
            config.ftl.geometry.page_size
        );
        let state = State::new(config)?;
        Ok(Self { board, state })
    }

    /// Starts the core on a board whose flash may hold an earlier life
    /// (power loss, restart): reads the sequence journal (see
    /// [`crate::journal`]: the first page of every block, then the newest
    /// journal block), marks every other block as holding unknown data (the KV cache does not outlive power:
    /// its maps were in DRAM), erased when the FTL first opens it (a block
    /// whose erase fails is retired then), and marks the sequences that
    /// were open as lost. From then on SEQ_OPEN and SEQ_CLOSE are
    /// journaled, and open sequences are bounded by what one journal page
    /// names (1 019 with 4 KiB pages).
    pub fn boot(mut board: B, mut config: DeviceConfig) -> Result<Self, DeviceError> {
        let geo = config.ftl.geometry;
        let (mut journal, lost, wear) =
            crate::journal::Journal::load(&mut board, &geo, &config.ftl.bad_blocks)
                .map_err(|_| DeviceError::Config("journal unreadable"))?;
        // A snapshot of the open ids fits one page: no more may be open
        // (Identify reports the bound).
        let cap = crate::journal::capacity(geo.page_size as usize);
        config.max_sequences = config.max_sequences.min(cap as u32);
        log_info!(
            "device core up through the journal: {=u32} sequences, {=u32} B pages",
            config.max_sequences,
            config.ftl.geometry.page_size
        );
        let mut state = State::new(config)?;
        // Every other block may hold KV data of the earlier life: each is
        // erased when the FTL first opens it, not all at power-on. The
        // newest journal block stays as it is until the new journal holds
        // a snapshot.
        state.ftl.assume_unerased();
        // Wear levelling goes on from the erase counts and retired blocks
        // of the journal's last move, not from zero.
        if let Some(table) = wear
            && state.ftl.restore_wear(&table).is_err()
        {
            log_info!("journal: a wear table of another geometry, not used");
        }
        if let Some(b) = journal.found_block()
            && state.ftl.hold_block(b).is_err()
        {
            // Retired by the wear table: never erased or reused anyway.
            log_debug!("journal: its newest block was retired");
        }
        journal
            .write(&mut board, &mut state.ftl, &lost)
            .map_err(|_| DeviceError::Config("journal unwritable"))?;
        state.lost = lost.into_iter().collect();
        state.journal = Some(journal);
        Ok(Self { board, state })
    }

    /// The board, taken back (the simulated board's flash after a power
    /// loss).
    pub fn into_board(self) -> B {
        self.board
    }

    /// Serves at most one command.
    pub fn poll(&mut self) -> Result<Progress, DeviceError> {
        crate::dispatch::poll(&mut self.state, &mut self.board)
    }

    /// Work a drive does while no command waits: one background GC step
    /// (a victim or a wear-levelling move) if the FTL wants one. True if
    /// it did one, so a caller with idle time left may call again.
    /// A failure inside the step is logged and ends the idle work, as
    /// the background step after a command does.
    pub fn idle_step(&mut self) -> bool {
        crate::gc::background(&mut self.board, &mut self.state)
    }

    /// Serves commands until every queue is empty; returns how many.
    pub fn run_until_idle(&mut self) -> Result<usize, DeviceError> {
        let mut served = 0;
        while self.poll()? == Progress::Served {
            served += 1;
        }
        Ok(served)
    }

    /// The board.
    pub fn board(&self) -> &B {
        &self.board
    }

    /// The board, mutably (the simulated host uses it to reach host memory
    /// and doorbells).
    pub fn board_mut(&mut self) -> &mut B {
        &mut self.board
    }

    /// The statistics log page as the host would read it.
    pub fn stats(&self) -> proto::StatsLog {
        crate::stats::snapshot(&self.state, &self.board)
    }

    /// The flash translation layer, for inspection (block accounting in
    /// tests and tools).
    pub fn ftl(&self) -> &ftl::Ftl {
        &self.state.ftl
    }

    /// When and how garbage collection runs (the FTL's defaults for the
    /// geometry unless set).
    pub fn set_gc(&mut self, gc: ftl::GcConfig) -> Result<(), DeviceError> {
        self.state
            .ftl
            .set_gc(gc)
            .map_err(|_| DeviceError::Config("garbage collection settings"))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::path::Path;
    use std::string::String;
    use std::vec::Vec;

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src readable") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The device object is the top of the crate: only the crate root (its
    /// re-exports) and this file name it, so no handler can reach back into
    /// it and close an import circle.
    #[test]
    fn no_module_imports_device() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(files.len() > 10, "sources found: {}", files.len());
        let mut offenders: Vec<String> = Vec::new();
        for file in &files {
            let rel = file.strip_prefix(&src).expect("under src");
            if rel == Path::new("lib.rs") || rel == Path::new("device.rs") {
                continue;
            }
            let text = std::fs::read_to_string(file).expect("source readable");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if [
                    "crate::device",
                    "crate::Device",
                    "super::device",
                    "super::Device",
                ]
                .iter()
                .any(|p| code.contains(p))
                {
                    offenders.push(std::format!("{}:{}", rel.display(), n + 1));
                }
            }
        }
        assert!(offenders.is_empty(), "modules import device: {offenders:?}");
    }
}
