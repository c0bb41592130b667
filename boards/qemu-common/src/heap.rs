//! The firmware's heap: a linked-list allocator over a DRAM range the
//! image does not use.
#![allow(unsafe_code)] // the global allocator over a raw DRAM range

use embedded_alloc::LlffHeap;

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

/// Hands `[start, start + size)` to the allocator.
///
/// # Safety
///
/// The range must be RAM, mapped, unused by the image and its stacks, and
/// this must be called once, before the first allocation.
pub(crate) unsafe fn init(start: usize, size: usize) {
    // SAFETY: the caller's contract.
    unsafe { HEAP.init(start, size) }
}

/// Single core, and the firmware never enables interrupts: nothing can
/// preempt a critical section, so entering one needs no state.
struct SingleCore;
critical_section::set_impl!(SingleCore);

// SAFETY: one core, interrupts masked from reset and never unmasked, so
// acquire/release have nothing to exclude.
unsafe impl critical_section::Impl for SingleCore {
    unsafe fn acquire() {}
    unsafe fn release(_: ()) {}
}
