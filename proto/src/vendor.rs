//! The InstCSD vendor I/O command set: typed commands, their SQE encoding,
//! strict parsers, and the payload layouts they imply.
//!
//! Every command goes to namespace [`VENDOR_NSID`] on an I/O queue.
//! [`to_sqe`](VendorCommand::to_sqe) leaves the command id and the PRPs zero:
//! the transport fills them. `parse` checks every field the command owns —
//! opcode, fuse (0), PSDT (0, PRPs only), reserved cdw0 bits, `cdw2`, `cdw3`,
//! `mptr`, every reserved bit of cdw10..cdw15 and every value range — and the
//! firmware answers a parse error with [`ProtoError::status`] (normally
//! INVALID_FIELD). The namespace id (INVALID_NAMESPACE) and the PRPs
//! (checked while walking) are the firmware's business.
//!
//! Each command's fields, their bits in cdw10..cdw15 and their meaning are
//! declared once, in the command's struct; [`LAYOUTS`] holds them as data,
//! [`LayoutTable`] renders them, and `docs/vendor-commands.md` (generated
//! from both) tables them with the payloads and `nvme-cli` recipes.
//!
//! Every data-carrying command has `ndt`, the number of dwords of data
//! (≥ 1). How many bytes a command carries depends on its sequence's
//! [`SeqShape`]: `payload_bytes` computes it and `check_shape` (answered
//! with SHAPE_MISMATCH) compares NDT, the layer and sparf's `r` against the
//! shape. All element data is little-endian.
//!
//! A **rotated** sequence ([`SeqShape::rotated`]) keeps two copies of K: the
//! token-indexed copy the exact pass reads, and a dim-indexed copy of K̃,
//! the keys in a per-(layer, KV head) basis the host chose at prefill.
//! SparF's approximate stage scores q̃ (the query in the same basis)
//! against K̃; the exact pass is unchanged. The basis never reaches the
//! device: the host rotates.

use bytemuck::{Pod, Zeroable};
use core::fmt;

use crate::wire::{check_len, get_u32, get_u64, put_u32, put_u64};
use crate::{Opcode, ProtoError, Sqe};

mod layout;
mod table;

pub use layout::{BitRange, CommandLayout, FieldLayout, LayoutRow, LayoutRows};
use layout::{FieldBits, vendor_command};
pub use table::{LayoutTable, layout_rows};

/// Every vendor command's layout, by opcode.
pub const LAYOUTS: [&CommandLayout; 5] = [
    SeqOpen::LAYOUT,
    KvAppend::LAYOUT,
    SeqClose::LAYOUT,
    DecodeSubmit::LAYOUT,
    DecodeFetch::LAYOUT,
];

/// Namespace id every vendor command is sent to.
pub const VENDOR_NSID: u32 = 1;

/// Largest supported `head_dim`.
pub const MAX_HEAD_DIM: u16 = 256;
/// Largest supported `dim_group` (m).
pub const MAX_DIM_GROUP: u8 = 8;

fn invalid(field: &'static str, value: impl Into<u64>) -> ProtoError {
    ProtoError::InvalidField {
        field,
        value: value.into(),
    }
}

fn reserved(field: &'static str, value: impl Into<u64>, mask: u64) -> Result<(), ProtoError> {
    let value = value.into();
    if value & mask == 0 {
        Ok(())
    } else {
        Err(ProtoError::Reserved { field, value })
    }
}

fn shape_check(
    field: &'static str,
    ok: bool,
    expected: u64,
    actual: u64,
) -> Result<(), ProtoError> {
    if ok {
        Ok(())
    } else {
        Err(ProtoError::ShapeMismatch {
            field,
            expected,
            actual,
        })
    }
}

/// An SQE for `op` with the vendor namespace and everything else zero.
fn base_sqe(op: Opcode) -> Sqe {
    Sqe {
        nsid: VENDOR_NSID,
        ..Sqe::new(op)
    }
}

/// Checks what all vendor commands share: opcode, cdw0 flags, cdw2/3, mptr.
fn check_common(sqe: &Sqe, op: Opcode) -> Result<(), ProtoError> {
    if sqe.opcode() != op {
        return Err(ProtoError::WrongOpcode {
            expected: op.0,
            actual: sqe.opcode().0,
        });
    }
    if sqe.fuse() != 0 {
        return Err(invalid("fuse", sqe.fuse()));
    }
    if sqe.psdt() != 0 {
        return Err(invalid("psdt", sqe.psdt()));
    }
    reserved("cdw0[13:10]", sqe.cdw0, 0xF << 10)?;
    reserved("cdw2", sqe.cdw2, u64::MAX)?;
    reserved("cdw3", sqe.cdw3, u64::MAX)?;
    reserved("mptr", sqe.mptr, u64::MAX)
}

fn check_ndt(ndt: u32) -> Result<(), ProtoError> {
    if ndt == 0 {
        Err(invalid("ndt", 0u32))
    } else {
        Ok(())
    }
}

fn ndt_of(bytes: u64) -> Result<u32, ProtoError> {
    u32::try_from(bytes / 4).map_err(|_| invalid("ndt", bytes / 4))
}

/// The shape of a sequence's KV cache, fixed at [`SeqOpen`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeqShape {
    /// Transformer layers (≥ 1).
    pub layers: u16,
    /// KV heads per layer (≥ 1).
    pub kv_heads: u8,
    /// Query heads per KV head (GQA group size, ≥ 1).
    pub group: u8,
    /// Head dimension (even, `2..=256`).
    pub head_dim: u16,
    /// Dimension group `m` of the sparf filter (`1..=8`, divides `head_dim`).
    pub dim_group: u8,
    /// The dim-indexed copy holds host-supplied keys K̃ (see the module
    /// docs): KV_APPEND and DECODE_SUBMIT carry the extra blocks.
    pub rotated: bool,
    /// Where the device places the tokens of an append (see
    /// [`Placement`]).
    pub placement: Placement,
}

/// How a sequence's tokens are placed on flash pages, fixed at
/// [`SeqOpen`]. With `similar`, the device orders the tokens of each
/// KV_APPEND of at least two pages by key similarity (per KV head) before
/// writing them, so that the PAGES method's chosen pages hold the tokens
/// attention needs; the first `sink` tokens of the sequence stay first and
/// are also pinned in device DRAM, and the last `recent_pages` pages of an
/// append keep their order. Attention is a sum over tokens, so no result
/// depends on the order; only which pages a selection reads does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Placement {
    /// Order appends by similarity.
    pub similar: bool,
    /// Attention-sink tokens pinned in DRAM (≤ [`Placement::MAX_SINK`]).
    pub sink: u8,
    /// Pages at the end of an append kept in time order.
    pub recent_pages: u8,
    /// Bits per key element of the page sketch the device keeps in DRAM
    /// for PAGES' [`DecodeFlags::SKETCH`] score: 0 (none), 1, 2 or 4.
    pub sketch_bits: u8,
    /// The SKETCH score ranks only the pages the mean score shortlists,
    /// this many times the decode's `k`; 0: every page.
    pub sketch_shortlist: u8,
    /// Half of that shortlist (the smaller half) is taken by Quest's bound
    /// instead of the mean score.
    pub shortlist_bound: bool,
}

impl Placement {
    /// Time order, nothing pinned.
    pub const TIME: Placement = Placement {
        similar: false,
        sink: 0,
        recent_pages: 0,
        sketch_bits: 0,
        sketch_shortlist: 0,
        shortlist_bound: false,
    };
    /// Most sink tokens a sequence may pin.
    pub const MAX_SINK: u8 = 64;
}

impl SeqShape {
    /// Query heads: `kv_heads · group`.
    pub const fn query_heads(&self) -> u32 {
        self.kv_heads as u32 * self.group as u32
    }

    /// Checks every range [`SeqOpen::parse`] checks.
    pub fn validate(&self) -> Result<(), ProtoError> {
        if self.layers == 0 {
            return Err(invalid("layers", 0u32));
        }
        if self.kv_heads == 0 {
            return Err(invalid("kv_heads", 0u32));
        }
        if self.group == 0 {
            return Err(invalid("group", 0u32));
        }
        let hd = self.head_dim;
        if !(2..=MAX_HEAD_DIM).contains(&hd) || !hd.is_multiple_of(2) {
            return Err(invalid("head_dim", hd));
        }
        let m = self.dim_group;
        if m == 0 || m > MAX_DIM_GROUP || !hd.is_multiple_of(m as u16) {
            return Err(invalid("dim_group", m));
        }
        if self.placement.sink > Placement::MAX_SINK {
            return Err(invalid("sink", self.placement.sink));
        }
        if !matches!(self.placement.sketch_bits, 0 | 1 | 2 | 4) {
            return Err(invalid("sketch_bits", self.placement.sketch_bits));
        }
        Ok(())
    }
}

vendor_command! {
    /// SEQ_OPEN (80h): create sequence `seq` with a fixed [`SeqShape`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct SeqOpen(SEQ_OPEN, data "none") {
        /// Sequence id chosen by the host.
        pub seq: u32 = cdw11[31:0],
        /// Transformer layers (≥ 1).
        pub layers: u16 = cdw12[15:0],
        /// KV heads per layer (≥ 1).
        pub kv_heads: u8 = cdw12[23:16],
        /// Query heads per KV head, the GQA group size (≥ 1).
        pub group: u8 = cdw12[31:24],
        /// Head dimension (even, 2..=256).
        pub head_dim: u16 = cdw13[15:0],
        /// Dimension group m of the sparf filter (1..=8, divides head_dim).
        pub dim_group: u8 = cdw13[23:16],
        /// The sequence is rotated: it keeps host-rotated keys K̃, and
        /// KV_APPEND and DECODE_SUBMIT carry the extra blocks.
        pub rotated: bool = cdw13[24:24],
        /// Appends are placed by key similarity (`Placement::similar`).
        pub similar: bool = cdw13[25:25],
        /// Half the sketch's shortlist by Quest's bound
        /// (`Placement::shortlist_bound`).
        pub shortlist_bound: bool = cdw13[26:26],
        /// Attention-sink tokens pinned in DRAM (≤ 64).
        pub sink: u8 = cdw14[7:0],
        /// Pages at the end of an append kept in time order.
        pub recent_pages: u8 = cdw14[15:8],
        /// Bits per key element of the DRAM page sketch (0, 1, 2 or 4).
        pub sketch_bits: u8 = cdw14[23:16],
        /// Pages the mean score shortlists for the sketch score, in
        /// multiples of k (0: every page).
        pub sketch_shortlist: u8 = cdw14[31:24],
    }
}

impl SeqOpen {
    /// Command opening `seq` with `shape`.
    pub const fn new(seq: u32, shape: SeqShape) -> Self {
        SeqOpen {
            seq,
            layers: shape.layers,
            kv_heads: shape.kv_heads,
            group: shape.group,
            head_dim: shape.head_dim,
            dim_group: shape.dim_group,
            rotated: shape.rotated,
            similar: shape.placement.similar,
            shortlist_bound: shape.placement.shortlist_bound,
            sink: shape.placement.sink,
            recent_pages: shape.placement.recent_pages,
            sketch_bits: shape.placement.sketch_bits,
            sketch_shortlist: shape.placement.sketch_shortlist,
        }
    }

    /// The shape this command opens.
    pub const fn shape(&self) -> SeqShape {
        SeqShape {
            layers: self.layers,
            kv_heads: self.kv_heads,
            group: self.group,
            head_dim: self.head_dim,
            dim_group: self.dim_group,
            rotated: self.rotated,
            placement: Placement {
                similar: self.similar,
                sink: self.sink,
                recent_pages: self.recent_pages,
                sketch_bits: self.sketch_bits,
                sketch_shortlist: self.sketch_shortlist,
                shortlist_bound: self.shortlist_bound,
            },
        }
    }

    /// Decodes and validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_common(sqe, Opcode::SEQ_OPEN)?;
        Self::LAYOUT.check_reserved(sqe)?;
        let cmd = Self::fields_of(sqe);
        cmd.shape().validate()?;
        Ok(cmd)
    }
}

vendor_command! {
    /// SEQ_CLOSE (84h): close `seq` and release its flash.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct SeqClose(SEQ_CLOSE, data "none") {
        /// Sequence id.
        pub seq: u32 = cdw11[31:0],
    }
}

impl SeqClose {
    /// Decodes and validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_common(sqe, Opcode::SEQ_CLOSE)?;
        Self::LAYOUT.check_reserved(sqe)?;
        Ok(Self::fields_of(sqe))
    }
}

vendor_command! {
    /// KV_APPEND (81h, host→device): append `tokens` K/V rows to one layer
    /// at `first_pos`, which must equal the layer's current length (the
    /// device answers POSITION_MISMATCH for gaps or duplicates).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct KvAppend(
        KV_APPEND,
        data "K `[kv_heads][tokens][head_dim]` f16, then V in the same shape, \
              then in a rotated sequence K̃ in the same shape"
    ) {
        /// Sequence id.
        pub seq: u32 = cdw11[31:0],
        /// Layer index (< layers).
        pub layer: u16 = cdw12[15:0],
        /// Position of the first appended token: the layer's current length.
        pub first_pos: u32 = cdw13[31:0],
        /// Tokens appended (≥ 1).
        pub tokens: u32 = cdw14[31:0],
        /// NDT: data dwords (≥ 1).
        pub ndt: u32 = cdw10[31:0],
    }
}

impl KvAppend {
    /// Command with NDT computed from `shape`; fails if the payload exceeds
    /// what NDT can express.
    pub fn new(
        seq: u32,
        layer: u16,
        first_pos: u32,
        tokens: u32,
        shape: &SeqShape,
    ) -> Result<Self, ProtoError> {
        let mut cmd = KvAppend {
            seq,
            layer,
            first_pos,
            tokens,
            ndt: 0,
        };
        cmd.ndt = ndt_of(cmd.payload_bytes(shape))?;
        Ok(cmd)
    }

    /// Payload bytes: `blocks · kv_heads · tokens · head_dim · 2`, with 2
    /// blocks (K, V), 3 in a rotated sequence (K, V, K̃).
    pub const fn payload_bytes(&self, shape: &SeqShape) -> u64 {
        let blocks = if shape.rotated { 3 } else { 2 };
        2 * blocks * shape.kv_heads as u64 * self.tokens as u64 * shape.head_dim as u64
    }

    /// Checks `layer` and NDT against the sequence shape.
    pub fn check_shape(&self, shape: &SeqShape) -> Result<(), ProtoError> {
        shape_check(
            "layer",
            self.layer < shape.layers,
            shape.layers as u64,
            self.layer as u64,
        )?;
        let bytes = self.payload_bytes(shape);
        shape_check(
            "ndt",
            self.ndt as u64 * 4 == bytes,
            bytes / 4,
            self.ndt as u64,
        )
    }

    /// Decodes and validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_common(sqe, Opcode::KV_APPEND)?;
        let cmd = Self::fields_of(sqe);
        check_ndt(cmd.ndt)?;
        Self::LAYOUT.check_reserved(sqe)?;
        if cmd.tokens == 0 {
            return Err(invalid("tokens", 0u32));
        }
        Ok(cmd)
    }
}

/// Decode attention method (open: unknown values are representable, and
/// rejected by the parsers with [`ProtoError::UnsupportedMethod`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Method(pub u8);

impl Method {
    /// Exact attention over every cached token.
    pub const DENSE: Method = Method(0);
    /// SparF: approximate scores from the top-`r` query dimensions, exact
    /// attention over the top-`k` tokens plus the `local` most recent ones.
    pub const SPARF: Method = Method(1);
    /// PAGES, the flash-aware selection: at most `k` full token pages per
    /// KV head chosen by a bound on their logits from per-page summaries
    /// in device DRAM (the `local` most recent always), read whole; `r` is
    /// the mass budget in thousandths (1000: read all `k`). See
    /// `attention::engine::pages_group`.
    pub const PAGES: Method = Method(2);

    /// One of the methods this protocol version defines.
    pub const fn is_known(self) -> bool {
        matches!(self, Self::DENSE | Self::SPARF | Self::PAGES)
    }

    /// Bit of this method in [`crate::CapabilityBlock::methods`] (0 if the
    /// method number is 16 or more).
    pub const fn bit(self) -> u16 {
        match 1u16.checked_shl(self.0 as u32) {
            Some(b) => b,
            None => 0,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::DENSE => f.write_str("dense"),
            Self::SPARF => f.write_str("sparf"),
            Self::PAGES => f.write_str("pages"),
            Method(m) => write!(f, "method {m}"),
        }
    }
}

impl FieldBits for Method {
    const WIDTH: u32 = u8::WIDTH;
    fn to_bits(self) -> u32 {
        self.0.into()
    }
    fn from_bits(bits: u32) -> Self {
        Method(u8::from_bits(bits))
    }
}

/// DECODE_SUBMIT flags ([`DecodeSubmit::flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DecodeFlags(pub u8);

impl DecodeFlags {
    /// No flags.
    pub const NONE: DecodeFlags = DecodeFlags(0);
    /// Store k_new/v_new at `position` before attending.
    pub const APPEND_KV: DecodeFlags = DecodeFlags(1);
    /// Sparf only: the adaptive guardrail, parameters in a [`GuardTrailer`]
    /// at the end of the payload.
    pub const GUARD: DecodeFlags = DecodeFlags(2);
    /// PAGES only: the pages not read join the softmax as their mean key
    /// and mean value (see `attention::shape::PagesParams::fill`).
    pub const FILL: DecodeFlags = DecodeFlags(4);
    /// PAGES only: pages are scored by their mean key (the logit of q
    /// against it, plus ln of its rows) instead of the min/max bound.
    pub const MEAN: DecodeFlags = DecodeFlags(8);
    /// PAGES only: pages are scored by the attention mass of their tokens
    /// under the sequence's DRAM key sketch ([`Placement::sketch_bits`]);
    /// with FILL the unread tokens join the softmax at their sketch logits
    /// with their page's mean value. Takes precedence over MEAN.
    pub const SKETCH: DecodeFlags = DecodeFlags(16);
    /// All defined bits.
    pub const ALL: DecodeFlags = DecodeFlags(31);

    /// APPEND_KV is set.
    pub const fn append_kv(self) -> bool {
        self.0 & Self::APPEND_KV.0 != 0
    }

    /// GUARD is set.
    pub const fn guard(self) -> bool {
        self.0 & Self::GUARD.0 != 0
    }

    /// FILL is set.
    pub const fn fill(self) -> bool {
        self.0 & Self::FILL.0 != 0
    }

    /// MEAN is set.
    pub const fn mean(self) -> bool {
        self.0 & Self::MEAN.0 != 0
    }

    /// SKETCH is set.
    pub const fn sketch(self) -> bool {
        self.0 & Self::SKETCH.0 != 0
    }
}

impl FieldBits for DecodeFlags {
    const WIDTH: u32 = u8::WIDTH;
    fn to_bits(self) -> u32 {
        self.0.into()
    }
    fn from_bits(bits: u32) -> Self {
        DecodeFlags(u8::from_bits(bits))
    }
}

/// The guardrail's parameters, the last 8 bytes of a DECODE_SUBMIT payload
/// with [`DecodeFlags::GUARD`] (LE): `alpha_min_milli` u16 at 0 (≤ 1000),
/// reserved u16 at 2 (0), `k_cap` u32 at 4 (≥ 1). While the approximate
/// mass α of some query head of a KV group on its chosen tokens is below
/// `alpha_min_milli`/1000, the device doubles that group's k, up to
/// min(`k_cap`, tokens); see `attention::engine::select_guarded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GuardTrailer {
    /// α threshold in thousandths.
    pub alpha_min_milli: u16,
    /// Most tokens k may grow to.
    pub k_cap: u32,
}

impl GuardTrailer {
    /// Bytes on the wire.
    pub const SIZE: usize = 8;

    /// Little-endian bytes.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..2].copy_from_slice(&self.alpha_min_milli.to_le_bytes());
        b[4..].copy_from_slice(&self.k_cap.to_le_bytes());
        b
    }

    /// Parses and validates exactly [`Self::SIZE`] bytes.
    pub fn parse(b: &[u8]) -> Result<Self, ProtoError> {
        if b.len() != Self::SIZE {
            return Err(invalid("guard trailer length", b.len() as u64));
        }
        let alpha_min_milli = u16::from_le_bytes([b[0], b[1]]);
        let pad = u16::from_le_bytes([b[2], b[3]]);
        let k_cap = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if alpha_min_milli > 1000 {
            return Err(invalid("alpha_min_milli", alpha_min_milli));
        }
        reserved("guard[3:2]", pad, u64::MAX)?;
        if k_cap == 0 {
            return Err(invalid("k_cap", 0u32));
        }
        Ok(Self {
            alpha_min_milli,
            k_cap,
        })
    }
}

vendor_command! {
    /// DECODE_SUBMIT (85h, host→device): run decode attention for one layer.
    ///
    /// `position` is the query token's: with APPEND_KV it must equal the
    /// layer's current length (k_new/v_new are stored there first), without
    /// it length − 1 (POSITION_MISMATCH otherwise). Dense: `r`, `local`, `k`
    /// zero. Sparf: `1 ≤ r ≤ head_dim`, `k ≥ 1`. With GUARD (sparf only) the
    /// payload ends in a [`GuardTrailer`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct DecodeSubmit(
        DECODE_SUBMIT,
        data "q `[kv_heads·group][head_dim]` f16; in a rotated sequence with sparf, \
              q̃ in the same shape; with APPEND_KV k_new and v_new `[kv_heads][head_dim]` \
              f16 (and k̃_new in a rotated sequence); with GUARD the 8-byte guard trailer"
    ) {
        /// Sequence id.
        pub seq: u32 = cdw11[31:0],
        /// Layer index (< layers).
        pub layer: u16 = cdw12[15:0],
        /// Attention method (`Method`).
        pub method: Method = cdw12[23:16],
        /// Flags (`DecodeFlags`).
        pub flags: DecodeFlags = cdw12[31:24],
        /// Position of the query token.
        pub position: u32 = cdw13[31:0],
        /// Sparf: query dimensions used for approximate scores; pages: the
        /// mass budget in thousandths, ≤ 1000 (dense: 0).
        pub r: u16 = cdw14[15:0],
        /// Sparf: most recent tokens always attended; pages: most recent
        /// full pages always read (dense: 0).
        pub local: u16 = cdw14[31:16],
        /// Sparf: top tokens attended exactly; pages: most full pages read
        /// per KV head (dense: 0).
        pub k: u32 = cdw15[31:0],
        /// NDT: data dwords (≥ 1).
        pub ndt: u32 = cdw10[31:0],
    }
}

impl DecodeSubmit {
    /// Dense decode; NDT computed from `shape`.
    pub fn dense(
        seq: u32,
        layer: u16,
        position: u32,
        flags: DecodeFlags,
        shape: &SeqShape,
    ) -> Self {
        Self::with_method(seq, layer, Method::DENSE, flags, position, 0, 0, 0, shape)
    }

    /// PAGES decode: at most `max_pages` full pages per KV head, the
    /// `local_pages` most recent always, until `mass_milli`/1000 of the
    /// estimated mass; NDT computed from `shape`.
    #[allow(clippy::too_many_arguments)]
    pub fn pages(
        seq: u32,
        layer: u16,
        position: u32,
        flags: DecodeFlags,
        mass_milli: u16,
        local_pages: u16,
        max_pages: u32,
        shape: &SeqShape,
    ) -> Self {
        Self::with_method(
            seq,
            layer,
            Method::PAGES,
            flags,
            position,
            mass_milli,
            local_pages,
            max_pages,
            shape,
        )
    }

    /// Sparf decode; NDT computed from `shape`.
    #[allow(clippy::too_many_arguments)]
    pub fn sparf(
        seq: u32,
        layer: u16,
        position: u32,
        flags: DecodeFlags,
        r: u16,
        local: u16,
        k: u32,
        shape: &SeqShape,
    ) -> Self {
        Self::with_method(
            seq,
            layer,
            Method::SPARF,
            flags,
            position,
            r,
            local,
            k,
            shape,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn with_method(
        seq: u32,
        layer: u16,
        method: Method,
        flags: DecodeFlags,
        position: u32,
        r: u16,
        local: u16,
        k: u32,
        shape: &SeqShape,
    ) -> Self {
        let mut cmd = DecodeSubmit {
            seq,
            layer,
            method,
            flags,
            position,
            r,
            local,
            k,
            ndt: 0,
        };
        // At most (255·255·65535·2 + 4·255·65535) / 4 < 2^32: always fits.
        cmd.ndt = (cmd.payload_bytes(shape) / 4) as u32;
        cmd
    }

    /// Payload bytes: `query_heads · head_dim · 2` (twice for sparf in a
    /// rotated sequence), plus `2 · kv_heads · head_dim · 2` with
    /// APPEND_KV (3 blocks in a rotated sequence), plus
    /// [`GuardTrailer::SIZE`] with GUARD.
    pub const fn payload_bytes(&self, shape: &SeqShape) -> u64 {
        let hd = shape.head_dim as u64;
        let q_blocks = if shape.rotated && self.method.0 == Method::SPARF.0 {
            2
        } else {
            1
        };
        let mut bytes = q_blocks * shape.query_heads() as u64 * hd * 2;
        if self.flags.append_kv() {
            let kv_blocks = if shape.rotated { 3 } else { 2 };
            bytes += kv_blocks * 2 * shape.kv_heads as u64 * hd;
        }
        if self.flags.guard() {
            bytes += GuardTrailer::SIZE as u64;
        }
        bytes
    }

    /// Checks `layer`, sparf's `r ≤ head_dim` and NDT against the shape.
    pub fn check_shape(&self, shape: &SeqShape) -> Result<(), ProtoError> {
        shape_check(
            "layer",
            self.layer < shape.layers,
            shape.layers as u64,
            self.layer as u64,
        )?;
        if self.method == Method::SPARF {
            shape_check(
                "r",
                self.r <= shape.head_dim,
                shape.head_dim as u64,
                self.r as u64,
            )?;
        }
        let bytes = self.payload_bytes(shape);
        shape_check(
            "ndt",
            self.ndt as u64 * 4 == bytes,
            bytes / 4,
            self.ndt as u64,
        )
    }

    /// Decodes and validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_common(sqe, Opcode::DECODE_SUBMIT)?;
        let cmd = Self::fields_of(sqe);
        check_ndt(cmd.ndt)?;
        Self::LAYOUT.check_reserved(sqe)?;
        let (method, flags) = (cmd.method, cmd.flags);
        reserved("flags", flags.0, !DecodeFlags::ALL.0 as u64)?;
        match method {
            Method::DENSE => {
                if flags.guard() || flags.fill() || flags.mean() || flags.sketch() {
                    return Err(invalid("flags", flags.0));
                }
                if cmd.r != 0 {
                    return Err(invalid("r", cmd.r));
                }
                if cmd.local != 0 {
                    return Err(invalid("local", cmd.local));
                }
                if cmd.k != 0 {
                    return Err(invalid("k", cmd.k));
                }
            }
            Method::SPARF => {
                if flags.fill() || flags.mean() || flags.sketch() {
                    return Err(invalid("flags", flags.0));
                }
                if cmd.r == 0 || cmd.r > MAX_HEAD_DIM {
                    return Err(invalid("r", cmd.r));
                }
                if cmd.k == 0 {
                    return Err(invalid("k", 0u32));
                }
            }
            Method::PAGES => {
                if flags.guard() {
                    return Err(invalid("flags", flags.0));
                }
                if cmd.r > 1000 {
                    return Err(invalid("r (mass, thousandths)", cmd.r));
                }
                if cmd.k == 0 {
                    return Err(invalid("k (pages)", 0u32));
                }
            }
            Method(m) => return Err(ProtoError::UnsupportedMethod(m)),
        }
        Ok(cmd)
    }
}

vendor_command! {
    /// DECODE_FETCH (86h, device→host): read the result of the last
    /// DECODE_SUBMIT for (`seq`, `layer`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct DecodeFetch(
        DECODE_FETCH,
        data "out `[kv_heads·group][head_dim]` i32 (Q17.14 fixed point), \
              then the 32-byte decode report"
    ) {
        /// Sequence id.
        pub seq: u32 = cdw11[31:0],
        /// Layer index (< layers).
        pub layer: u16 = cdw12[15:0],
        /// NDT: data dwords (≥ 1).
        pub ndt: u32 = cdw10[31:0],
    }
}

impl DecodeFetch {
    /// Command with NDT computed from `shape`.
    pub fn new(seq: u32, layer: u16, shape: &SeqShape) -> Self {
        // At most (255·255·65535·4 + 32) / 4 < 2^32.
        DecodeFetch {
            seq,
            layer,
            ndt: (Self::payload_bytes(shape) / 4) as u32,
        }
    }

    /// Output bytes: `query_heads · head_dim · 4 + 32`.
    pub const fn payload_bytes(shape: &SeqShape) -> u64 {
        shape.query_heads() as u64 * shape.head_dim as u64 * 4 + DecodeReport::SIZE as u64
    }

    /// Checks `layer` and NDT against the shape.
    pub fn check_shape(&self, shape: &SeqShape) -> Result<(), ProtoError> {
        shape_check(
            "layer",
            self.layer < shape.layers,
            shape.layers as u64,
            self.layer as u64,
        )?;
        let bytes = Self::payload_bytes(shape);
        shape_check(
            "ndt",
            self.ndt as u64 * 4 == bytes,
            bytes / 4,
            self.ndt as u64,
        )
    }

    /// Decodes and validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_common(sqe, Opcode::DECODE_FETCH)?;
        let cmd = Self::fields_of(sqe);
        check_ndt(cmd.ndt)?;
        Self::LAYOUT.check_reserved(sqe)?;
        Ok(cmd)
    }
}

/// Per-decode statistics appended to DECODE_FETCH output (32 bytes, LE):
/// `tokens_attended` 0, `pages_read` 4, `pages_skipped` 8, `guard_widened` 12,
/// `engine_bytes` 16, `elements_filtered` 24.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
pub struct DecodeReport {
    /// Tokens whose V rows entered the weighted sum.
    pub tokens_attended: u32,
    /// Flash pages read for this decode.
    pub pages_read: u32,
    /// Flash pages skipped thanks to sparse selection.
    pub pages_skipped: u32,
    /// KV heads whose k the guardrail widened in this decode.
    pub guard_widened: u32,
    /// Bytes streamed through the attention engine.
    pub engine_bytes: u64,
    /// Elements dropped by the sparf filter.
    pub elements_filtered: u64,
}

const _: () = assert!(core::mem::size_of::<DecodeReport>() == DecodeReport::SIZE);

impl DecodeReport {
    /// Wire size in bytes.
    pub const SIZE: usize = 32;

    /// Little-endian wire encoding.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_u32(&mut b, 0, self.tokens_attended);
        put_u32(&mut b, 4, self.pages_read);
        put_u32(&mut b, 8, self.pages_skipped);
        put_u32(&mut b, 12, self.guard_widened);
        put_u64(&mut b, 16, self.engine_bytes);
        put_u64(&mut b, 24, self.elements_filtered);
        b
    }

    /// Decodes exactly 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        Ok(DecodeReport {
            tokens_attended: get_u32(bytes, 0),
            pages_read: get_u32(bytes, 4),
            pages_skipped: get_u32(bytes, 8),
            guard_widened: get_u32(bytes, 12),
            engine_bytes: get_u64(bytes, 16),
            elements_filtered: get_u64(bytes, 24),
        })
    }
}

/// Any InstCSD vendor command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VendorCommand {
    /// SEQ_OPEN.
    SeqOpen(SeqOpen),
    /// SEQ_CLOSE.
    SeqClose(SeqClose),
    /// KV_APPEND.
    KvAppend(KvAppend),
    /// DECODE_SUBMIT.
    DecodeSubmit(DecodeSubmit),
    /// DECODE_FETCH.
    DecodeFetch(DecodeFetch),
}

impl VendorCommand {
    /// Decodes by opcode ([`ProtoError::UnknownOpcode`] for any other) and
    /// validates.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        Ok(match sqe.opcode() {
            Opcode::SEQ_OPEN => Self::SeqOpen(SeqOpen::parse(sqe)?),
            Opcode::SEQ_CLOSE => Self::SeqClose(SeqClose::parse(sqe)?),
            Opcode::KV_APPEND => Self::KvAppend(KvAppend::parse(sqe)?),
            Opcode::DECODE_SUBMIT => Self::DecodeSubmit(DecodeSubmit::parse(sqe)?),
            Opcode::DECODE_FETCH => Self::DecodeFetch(DecodeFetch::parse(sqe)?),
            Opcode(op) => return Err(ProtoError::UnknownOpcode(op)),
        })
    }

    /// Encodes (cid and PRPs zero).
    pub fn to_sqe(&self) -> Sqe {
        match self {
            Self::SeqOpen(c) => c.to_sqe(),
            Self::SeqClose(c) => c.to_sqe(),
            Self::KvAppend(c) => c.to_sqe(),
            Self::DecodeSubmit(c) => c.to_sqe(),
            Self::DecodeFetch(c) => c.to_sqe(),
        }
    }

    /// The command's dword layout.
    pub const fn layout(&self) -> &'static CommandLayout {
        match self {
            Self::SeqOpen(_) => SeqOpen::LAYOUT,
            Self::SeqClose(_) => SeqClose::LAYOUT,
            Self::KvAppend(_) => KvAppend::LAYOUT,
            Self::DecodeSubmit(_) => DecodeSubmit::LAYOUT,
            Self::DecodeFetch(_) => DecodeFetch::LAYOUT,
        }
    }

    /// The command's opcode.
    pub const fn opcode(&self) -> Opcode {
        match self {
            Self::SeqOpen(_) => Opcode::SEQ_OPEN,
            Self::SeqClose(_) => Opcode::SEQ_CLOSE,
            Self::KvAppend(_) => Opcode::KV_APPEND,
            Self::DecodeSubmit(_) => Opcode::DECODE_SUBMIT,
            Self::DecodeFetch(_) => Opcode::DECODE_FETCH,
        }
    }

    /// The sequence id the command addresses.
    pub const fn seq(&self) -> u32 {
        match self {
            Self::SeqOpen(c) => c.seq,
            Self::SeqClose(c) => c.seq,
            Self::KvAppend(c) => c.seq,
            Self::DecodeSubmit(c) => c.seq,
            Self::DecodeFetch(c) => c.seq,
        }
    }

    /// NDT, 0 for commands without data.
    pub const fn ndt(&self) -> u32 {
        match self {
            Self::SeqOpen(_) | Self::SeqClose(_) => 0,
            Self::KvAppend(c) => c.ndt,
            Self::DecodeSubmit(c) => c.ndt,
            Self::DecodeFetch(c) => c.ndt,
        }
    }

    /// Data bytes when they follow from the command alone (`Some(0)` for
    /// SEQ_OPEN/SEQ_CLOSE); `None` when they depend on the sequence shape —
    /// use the commands' `payload_bytes` and `check_shape`.
    pub const fn expected_data_bytes(&self) -> Option<u64> {
        match self {
            Self::SeqOpen(_) | Self::SeqClose(_) => Some(0),
            _ => None,
        }
    }

    /// Checks the command against its sequence's shape (always `Ok` for
    /// SEQ_OPEN/SEQ_CLOSE).
    pub fn check_shape(&self, shape: &SeqShape) -> Result<(), ProtoError> {
        match self {
            Self::SeqOpen(_) | Self::SeqClose(_) => Ok(()),
            Self::KvAppend(c) => c.check_shape(shape),
            Self::DecodeSubmit(c) => c.check_shape(shape),
            Self::DecodeFetch(c) => c.check_shape(shape),
        }
    }
}

impl From<SeqOpen> for VendorCommand {
    fn from(c: SeqOpen) -> Self {
        Self::SeqOpen(c)
    }
}

impl From<SeqClose> for VendorCommand {
    fn from(c: SeqClose) -> Self {
        Self::SeqClose(c)
    }
}

impl From<KvAppend> for VendorCommand {
    fn from(c: KvAppend) -> Self {
        Self::KvAppend(c)
    }
}

impl From<DecodeSubmit> for VendorCommand {
    fn from(c: DecodeSubmit) -> Self {
        Self::DecodeSubmit(c)
    }
}

impl From<DecodeFetch> for VendorCommand {
    fn from(c: DecodeFetch) -> Self {
        Self::DecodeFetch(c)
    }
}

#[cfg(test)]
mod commands_doc;
#[cfg(test)]
mod tests;
