//! Log points. With the `defmt` feature they are defmt frames (decoded on
//! the host against the firmware ELF, e.g. `defmt-print -e <elf>`);
//! without it they compile to nothing. The level filter is defmt's
//! `DEFMT_LOG` at build time.

/// A per-command log point.
macro_rules! log_debug {
    ($($t:tt)*) => {
        #[cfg(feature = "defmt")]
        {
            defmt::debug!($($t)*);
        }
    };
}

/// A log point for events (start-up, errors).
macro_rules! log_info {
    ($($t:tt)*) => {
        #[cfg(feature = "defmt")]
        {
            defmt::info!($($t)*);
        }
    };
}
