//! board-sim's integration tests, one binary: the host's view of the
//! simulated drive (queues, doorbells, counters) and Identify served by the
//! real firmware core.

mod csd;
mod identify;
