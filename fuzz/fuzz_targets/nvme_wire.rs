//! NVMe wire parsing: SQE, CQE, Identify, the capability block, the
//! statistics log, the vendor commands and their reports, PRP walking
//! over arbitrary list contents. Any input: a value or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::prp::PrpWalker;
use proto::{
    CapabilityBlock, Cqe, DecodeReport, GetLogPage, IdentifyCmd, IdentifyController, Sqe, StatsLog,
    VendorCommand,
};

fuzz_target!(|data: &[u8]| {
    let _ = Cqe::from_bytes(data.get(..16).unwrap_or(data));
    let _ = IdentifyController::from_bytes(data);
    let _ = CapabilityBlock::parse(data);
    let _ = StatsLog::from_bytes(data);
    let _ = DecodeReport::from_bytes(data.get(..32).unwrap_or(data));
    let Some(raw) = data.get(..64) else { return };
    let Ok(sqe) = Sqe::from_bytes(raw) else {
        return;
    };
    // A parsed SQE encodes back to the same bytes.
    assert_eq!(&sqe.to_bytes()[..], raw);
    let _ = VendorCommand::parse(&sqe);
    let _ = IdentifyCmd::parse(&sqe);
    let _ = GetLogPage::parse(&sqe);
    // PRPs of this SQE over a length from the input, lists read from the
    // rest of the input.
    let rest = &data[64..];
    let len = rest
        .first()
        .map_or(0, |&b| usize::from(b) << 12 | usize::from(b));
    if let Ok(mut w) = PrpWalker::new(sqe.prp1, sqe.prp2, len) {
        let mut budget = 1024;
        while budget > 0 {
            budget -= 1;
            let r = w.next_segment(|addr, out: &mut [u64]| {
                for (i, o) in out.iter_mut().enumerate() {
                    let at = (addr as usize).wrapping_add(8 * i) % rest.len().max(1);
                    let mut b = [0u8; 8];
                    for (j, x) in b.iter_mut().enumerate() {
                        *x = rest.get(at + j).copied().unwrap_or(0);
                    }
                    *o = u64::from_le_bytes(b);
                }
                Ok::<(), proto::ProtoError>(())
            });
            match r {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
});
