//! DH-HMAC-CHAP (NVMe in-band authentication) on NVMe/TCP, in the boot of
//! the 6.12 kernel (`guest_test=auth`): the kernel's host against the
//! kernel's target first (the guest's setup, and what the kernel says when
//! it refuses), then our initiator against the kernel's target and the
//! kernel's host against `instinfer serve --auth-secrets`.

mod host;
mod kernel_nvmet;
mod kernel_ours;
mod keys;
mod kmsg;
mod nvmet;
mod ours_nvmet;

/// The kernel host's wait for an admin command, in seconds (60 by
/// default). A refused exchange with this kernel's nvmet sometimes leaves
/// the host's last authentication command unanswered (the host then
/// closes the queue and fails the connect with EIO or EKEYREJECTED): a
/// refusal costs this long instead of a minute.
const ADMIN_TIMEOUT_S: &str = "10";

/// The auth boot's tests.
pub(crate) fn auth_path() -> Result<(), String> {
    crate::sys::loopback_up()?;
    crate::fabric::write(
        "/sys/module/nvme_core/parameters/admin_timeout",
        ADMIN_TIMEOUT_S,
    )?;
    nvmet::start()?;
    kernel_nvmet::kernel_host_on_nvmet()?;
    ours_nvmet::our_initiator_on_nvmet()?;
    kernel_ours::kernel_host_on_our_target()
}
