//! nvme-tcp's integration tests, one binary: hosts kept apart on one
//! target (per-NQN sequences, connection limits, malformed PDUs).

mod isolation;
