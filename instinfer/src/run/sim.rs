//! Arrays of simulated drives, or of any device a [`DeviceSpec`] names.

use crate::device::{AnyTransport, DeviceSpec};
use host_driver::array::CsdArray;
use host_driver::csd::{Csd, CsdError};
use host_driver::transport::{SimTransport, Transport, TransportError};

use super::{RunError, check_page_size, input};

/// `devices` fresh simulated drives with `page_size`-byte flash pages.
pub fn sim_array(devices: usize, page_size: u32) -> Result<CsdArray<SimTransport>, RunError> {
    array_of(devices, page_size, SimTransport::new)
}

/// `devices` fresh drives of kind `spec` with `page_size`-byte flash pages.
pub fn device_array(
    spec: &DeviceSpec,
    devices: usize,
    page_size: u32,
) -> Result<CsdArray<AnyTransport>, RunError> {
    array_of(devices, page_size, |p| spec.open(p))
}

fn array_of<T: Transport>(
    devices: usize,
    page_size: u32,
    open: impl Fn(u32) -> Result<T, TransportError>,
) -> Result<CsdArray<T>, RunError> {
    check_page_size(page_size)?;
    if devices == 0 {
        return Err(input("--devices must be at least 1"));
    }
    let mut csds = Vec::with_capacity(devices);
    for _ in 0..devices {
        csds.push(Csd::new(open(page_size).map_err(CsdError::from)?)?);
    }
    Ok(CsdArray::new(csds)?)
}
