//! A cycle stepper for rust-hdl blocks, without the threaded
//! [`rust_hdl::prelude::Simulation`].
//!
//! It settles the circuit exactly as rust-hdl's simulator does (call
//! `update_all` until nothing changes, at most 100 passes), so a block
//! behaves the same; it just drives the clock from the caller's thread.
//! The co-simulations push millions of clock edges through a block, and
//! handing the circuit between threads on every edge would cost most of
//! the run. `rust-hdl`'s own `Simulation` is used once per block in the
//! tests to show the two agree.

use rust_hdl::prelude::*;

/// Passes allowed for the circuit to settle (rust-hdl's own limit).
const MAX_PASSES: usize = 100;

/// Settles combinational logic after inputs changed.
///
/// # Panics
///
/// If the circuit does not converge (a combinational loop).
pub fn settle<B: Block>(uut: &mut B) {
    assert!(simulate(uut, MAX_PASSES), "circuit failed to converge");
}

/// One full clock cycle: a rising edge (registers capture what the inputs
/// set before this call imply), then the falling edge. Outputs read after
/// it show the state after the edge.
pub fn tick<B: Block>(uut: &mut B, clock: impl Fn(&mut B) -> &mut Signal<In, Clock>) {
    settle(uut);
    clock(uut).next = true.into();
    settle(uut);
    clock(uut).next = false.into();
    settle(uut);
}

/// Connects and checks a freshly built block (undriven nets, writes to
/// inputs, latches), as `generate_verilog` and `Simulation` do.
///
/// # Panics
///
/// If rust-hdl's static checks reject the block.
pub fn prepare<B: Block>(uut: &mut B) {
    uut.connect_all();
    if let Err(e) = check_all(uut) {
        panic!("rust-hdl check failed: {e:?}");
    }
    settle(uut);
}

/// Steps `uut` through `stim` (one entry per clock, applied by `drive`)
/// and groups what it emits between each `start` and `done`: the values
/// `output` returns while they are valid, per `done`, and the clocks from
/// each `start` to its `done` (inclusive).
pub fn run_batches<B: Block, C>(
    uut: &mut B,
    stim: &[C],
    is_start: impl Fn(&C) -> bool,
    drive: impl Fn(&mut B, &C),
    clock: impl Fn(&mut B) -> &mut Signal<In, Clock>,
    output: impl Fn(&B) -> Option<u32>,
    done: impl Fn(&B) -> bool,
) -> (Vec<Vec<u32>>, Vec<usize>) {
    let (mut batches, mut clocks) = (Vec::new(), Vec::new());
    let mut current = Vec::new();
    let mut started = 0;
    for (t, c) in stim.iter().enumerate() {
        if is_start(c) {
            started = t;
        }
        drive(uut, c);
        tick(uut, &clock);
        current.extend(output(uut));
        if done(uut) {
            batches.push(std::mem::take(&mut current));
            clocks.push(t + 1 - started);
        }
    }
    (batches, clocks)
}

/// What a run of a row-building block (the multiplexers in front of the
/// GeMV lanes: `BoundRow`, `SketchRow`) produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowRun {
    /// Every output beat's lanes, in order.
    pub beats: Vec<Vec<u16>>,
    /// The clock (index into the stimulus) of each output beat.
    pub out_clock: Vec<usize>,
}

impl RowRun {
    /// The rows of a run of `dims` (each row's d, in order), ⌈d/lanes⌉
    /// beats each, each row's elements past d dropped.
    pub fn rows(&self, dims: &[usize], lanes: usize) -> Vec<Vec<u16>> {
        let mut beats = self.beats.iter();
        dims.iter()
            .map(|&d| {
                let mut row: Vec<u16> = (0..crate::gemv::beats(d, lanes))
                    .filter_map(|_| beats.next())
                    .flatten()
                    .copied()
                    .collect();
                row.truncate(d);
                row
            })
            .collect()
    }
}
