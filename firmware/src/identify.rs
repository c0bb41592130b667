//! Identify Controller: the standard fields and the InstCSD capability
//! block in the vendor-specific area.

use crate::error::Fail;
use crate::state::State;
use proto::{CapabilityBlock, IdentifyCmd, IdentifyController, Method, Status};

/// The 4096-byte Identify Controller page.
pub(crate) fn controller(st: &State, cmd: &IdentifyCmd) -> Result<[u8; 4096], Fail> {
    if cmd.cns != proto::identify::CNS_CONTROLLER {
        return Err(Status::INVALID_FIELD.into());
    }
    let cfg = &st.config;
    let geo = st.ftl.geometry();
    let cap = CapabilityBlock {
        methods: Method::DENSE.bit() | Method::SPARF.bit() | Method::PAGES.bit(),
        page_size: geo.page_size,
        channels: geo.channels,
        ways: geo.ways,
        max_head_dim: cfg.max_head_dim,
        blocks_per_die: geo.blocks_per_die,
        pages_per_block: geo.pages_per_block,
        max_group: cfg.max_group,
        max_dim_group: proto::vendor::MAX_DIM_GROUP,
        max_layers: cfg.max_layers,
        max_sequences: cfg.max_sequences,
        engine_clock_khz: cfg.engine.clock_khz,
        engine_lanes: cfg.engine.lanes,
        max_kv_heads: cfg.max_kv_heads,
        dram_budget_bytes: cfg.ftl.dram_budget,
        max_tokens_per_stream: cfg.max_tokens_per_stream,
        mdts_bytes: cfg.mdts_bytes,
        sketch_widths: (1 << 1) | (1 << 2) | (1 << 4),
        pages_features: CapabilityBlock::SHORTLIST_BOUND,
        ..CapabilityBlock::default()
    };
    // MDTS is a power of two in units of the 4 KiB minimum page.
    let mdts = (cfg.mdts_bytes / 4096).max(1).ilog2() as u8;
    let id = &cfg.identity;
    let ctrl = IdentifyController {
        vid: id.vendor_id,
        ssvid: id.vendor_id,
        sn: id.serial,
        mn: id.model,
        fr: id.firmware_rev,
        mdts,
        capability: Some(cap),
    };
    Ok(ctrl.to_bytes())
}
