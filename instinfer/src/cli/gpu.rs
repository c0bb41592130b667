//! `instinfer gpu`: the GPU, its dma-buf export, and which peer-to-peer
//! paths to an NVMe device this machine's kernel and driver accept.

use instinfer::RunError;

/// Arguments of `gpu`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    ordinal: usize,
}

pub fn run(a: Args) -> Result<(), RunError> {
    let g = gpu::open(a.ordinal);
    print!("{}", gpu::report(g.as_ref()));
    if let Err(e) = &g {
        println!(
            "no GPU buffers here ({e}): the simulated drive's `--placement gpu-p2p|gpu-bounce` models them"
        );
    }
    Ok(())
}
