//! What the core keeps between commands: configuration, FTL, sequence
//! table, counters, working buffers, held-back completions, a command
//! fetched ahead and the journal. The handlers ([`crate::dispatch`], [`crate::identify`],
//! [`crate::stats`]) each take the part of it they use, and the board
//! beside it; none of them needs the device object.

use crate::config::DeviceConfig;
use crate::counters::Counters;
use crate::error::DeviceError;
use crate::hal::Submission;
use crate::journal::Journal;
use crate::scheduler::Scratch;
use crate::sequence::SequenceTable;
use alloc::collections::{BTreeSet, VecDeque};
use ftl::Ftl;
use proto::Status;

/// Everything the core keeps between commands.
#[derive(Debug)]
pub(crate) struct State {
    pub config: DeviceConfig,
    pub ftl: Ftl,
    pub sequences: SequenceTable,
    pub counters: Counters,
    pub scratch: Scratch,
    /// Completions the host's full CQ could not take yet, in order.
    pub pending: VecDeque<(Submission, Status, u32)>,
    /// A command fetched while admitting a batch of decodes that could
    /// not join it: served next.
    pub next: Option<Submission>,
    /// The sequence journal (boards that survive power loss).
    pub journal: Option<Journal>,
    /// Sequences open when power was lost, not yet acknowledged.
    pub lost: BTreeSet<u32>,
}

impl State {
    pub fn new(config: DeviceConfig) -> Result<Self, DeviceError> {
        if config.max_sequences == 0 || config.mdts_bytes < 4096 {
            return Err(DeviceError::Config(
                "max_sequences and mdts_bytes must be usable",
            ));
        }
        let ftl = Ftl::new(config.ftl.clone()).map_err(DeviceError::Ftl)?;
        let page = ftl.geometry().page_size as usize;
        let sequences = SequenceTable::new(config.max_sequences);
        let mut scratch = Scratch::default();
        scratch.page.resize(page, 0);
        Ok(Self {
            config,
            ftl,
            sequences,
            counters: Counters::default(),
            scratch,
            pending: VecDeque::new(),
            next: None,
            journal: None,
            lost: BTreeSet::new(),
        })
    }
}
