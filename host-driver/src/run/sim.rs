//! Arrays of simulated drives (and, re-exported, [`Phase`]: the counters
//! and virtual time of one phase of work on an array).

use crate::array::CsdArray;
use crate::csd::{Csd, CsdError};
use crate::transport::SimTransport;

use super::{RunError, check_page_size, input};

/// `devices` fresh simulated drives with `page_size`-byte flash pages.
pub fn sim_array(devices: usize, page_size: u32) -> Result<CsdArray<SimTransport>, RunError> {
    check_page_size(page_size)?;
    if devices == 0 {
        return Err(input("--devices must be at least 1"));
    }
    let mut csds = Vec::with_capacity(devices);
    for _ in 0..devices {
        let t = SimTransport::new(page_size).map_err(CsdError::from)?;
        csds.push(Csd::new(t)?);
    }
    Ok(CsdArray::new(csds)?)
}

pub use crate::measure::{Busy, Phase, PhaseCounters};
