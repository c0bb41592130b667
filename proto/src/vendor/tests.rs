//! Tests of the vendor command set: layouts, round trips, one rejection per
//! malformed field, shape checks.

use super::*;
use proptest::prelude::*;
use std::vec::Vec;

const SHAPE: SeqShape = SeqShape {
    layers: 4,
    kv_heads: 2,
    group: 4,
    head_dim: 64,
    dim_group: 4,
    rotated: false,
    placement: crate::vendor::Placement::TIME,
};

fn open() -> Sqe {
    SeqOpen::new(7, SHAPE).to_sqe()
}
fn close() -> Sqe {
    SeqClose { seq: 7 }.to_sqe()
}
fn append() -> Sqe {
    KvAppend::new(7, 1, 10, 3, &SHAPE).unwrap().to_sqe()
}
fn dense() -> Sqe {
    DecodeSubmit::dense(7, 1, 12, DecodeFlags::APPEND_KV, &SHAPE).to_sqe()
}
fn sparf() -> Sqe {
    DecodeSubmit::sparf(7, 1, 12, DecodeFlags::NONE, 16, 8, 32, &SHAPE).to_sqe()
}
fn fetch() -> Sqe {
    DecodeFetch::new(7, 1, &SHAPE).to_sqe()
}

fn all() -> [Sqe; 6] {
    [open(), close(), append(), dense(), sparf(), fetch()]
}

fn inv(field: &'static str, value: u64) -> ProtoError {
    ProtoError::InvalidField { field, value }
}

fn res(field: &'static str, value: u64) -> ProtoError {
    ProtoError::Reserved { field, value }
}

#[test]
fn encodings() {
    let s = open();
    assert_eq!(
        (s.opcode(), s.cid(), s.nsid, s.prp1, s.prp2),
        (Opcode::SEQ_OPEN, 0, VENDOR_NSID, 0, 0)
    );
    assert_eq!(
        (s.cdw10, s.cdw11, s.cdw12, s.cdw13),
        (0, 7, 4 | 2 << 16 | 4 << 24, 64 | 4 << 16)
    );
    let a = append();
    // 2 (K,V) * 2 heads * 3 tokens * 64 dims * 2 bytes = 1536 bytes = 384 dwords.
    assert_eq!(
        (a.cdw10, a.cdw11, a.cdw12, a.cdw13, a.cdw14, a.cdw15),
        (384, 7, 1, 10, 3, 0)
    );
    let d = dense();
    // q: 8 heads * 64 * 2 = 1024 B, k_new+v_new: 2 * 2 * 64 * 2 = 512 B.
    assert_eq!(
        (d.cdw10, d.cdw12, d.cdw13, d.cdw14, d.cdw15),
        (384, 1 | 1 << 24, 12, 0, 0)
    );
    let p = sparf();
    assert_eq!(
        (p.cdw10, p.cdw12, p.cdw14, p.cdw15),
        (256, 1 | 1 << 16, 16 | 8 << 16, 32)
    );
    let f = fetch();
    // 8 heads * 64 * 4 + 32 = 2080 B.
    assert_eq!((f.cdw10, f.cdw12), (520, 1));
    assert_eq!(DecodeFetch::payload_bytes(&SHAPE), 2080);
}

#[test]
fn every_builder_parses_back() {
    for s in all() {
        let c = VendorCommand::parse(&s).unwrap();
        assert_eq!(c.to_sqe(), s);
        assert_eq!(c.opcode(), s.opcode());
        assert_eq!(c.seq(), 7);
        assert_eq!(c.ndt(), s.cdw10);
        c.check_shape(&SHAPE).unwrap();
    }
}

#[test]
fn data_commands_match_direction() {
    use crate::DataDirection;
    for s in all() {
        let c = VendorCommand::parse(&s).unwrap();
        let has_data = c.ndt() != 0;
        assert_eq!(
            has_data,
            s.opcode().direction() != DataDirection::None,
            "{}",
            s.opcode()
        );
        assert_eq!(c.expected_data_bytes() == Some(0), !has_data);
    }
}

#[test]
fn transport_fields_are_not_checked() {
    for mut s in all() {
        s.set_cid(0xABCD);
        s.prp1 = 0x1234_5000;
        s.prp2 = 0x9999_0000;
        s.nsid = 5;
        assert!(VendorCommand::parse(&s).is_ok());
    }
}

#[test]
fn unknown_opcode() {
    let mut s = open();
    s.set_opcode(Opcode(0x82));
    assert_eq!(
        VendorCommand::parse(&s),
        Err(ProtoError::UnknownOpcode(0x82))
    );
    assert_eq!(
        VendorCommand::parse(&Sqe::new(Opcode::IDENTIFY)),
        Err(ProtoError::UnknownOpcode(0x06))
    );
}

#[test]
fn wrong_opcode_for_parser() {
    assert_eq!(
        SeqOpen::parse(&close()),
        Err(ProtoError::WrongOpcode {
            expected: 0x80,
            actual: 0x84
        })
    );
    assert!(matches!(
        SeqClose::parse(&open()),
        Err(ProtoError::WrongOpcode { .. })
    ));
    assert!(matches!(
        KvAppend::parse(&fetch()),
        Err(ProtoError::WrongOpcode { .. })
    ));
    assert!(matches!(
        DecodeSubmit::parse(&append()),
        Err(ProtoError::WrongOpcode { .. })
    ));
    assert!(matches!(
        DecodeFetch::parse(&dense()),
        Err(ProtoError::WrongOpcode { .. })
    ));
}

// Common fields, for every command.
macro_rules! reject_common {
    ($($name:ident: |$s:ident| $mutate:expr => $err:expr;)*) => {$(
        #[test]
        fn $name() {
            for mut $s in all() {
                $mutate;
                assert_eq!(VendorCommand::parse(&$s), Err($err), "{}", $s.opcode());
            }
        }
    )*};
}

reject_common! {
    rejects_fuse: |s| s.cdw0 |= 1 << 8 => inv("fuse", 1);
    rejects_psdt_sgl: |s| s.cdw0 |= 1 << 14 => inv("psdt", 1);
    rejects_cdw0_reserved: |s| s.cdw0 |= 1 << 12 => res("cdw0[13:10]", s.cdw0 as u64);
    rejects_cdw2: |s| s.cdw2 = 1 => res("cdw2", 1);
    rejects_cdw3: |s| s.cdw3 = 1 << 31 => res("cdw3", 1 << 31);
    rejects_mptr: |s| s.mptr = 0x1000 => res("mptr", 0x1000);
}

// Per-command fields.
macro_rules! reject {
    ($($name:ident: $base:ident |$s:ident| $mutate:expr => $err:expr;)*) => {$(
        #[test]
        fn $name() {
            let mut $s = $base();
            $mutate;
            assert_eq!(VendorCommand::parse(&$s), Err($err));
            assert_eq!($err.status(), crate::ProtoError::status(&$err));
        }
    )*};
}

reject! {
    seq_open_rejects_ndt: open |s| s.cdw10 = 1 => res("cdw10", 1);
    seq_open_rejects_zero_layers: open |s| s.cdw12 &= !0xFFFF => inv("layers", 0);
    seq_open_rejects_zero_kv_heads: open |s| s.cdw12 &= !(0xFF << 16) => inv("kv_heads", 0);
    seq_open_rejects_zero_group: open |s| s.cdw12 &= !(0xFF << 24) => inv("group", 0);
    seq_open_rejects_zero_head_dim: open |s| s.cdw13 &= !0xFFFF => inv("head_dim", 0);
    seq_open_rejects_odd_head_dim: open |s| s.cdw13 = 63 | 1 << 16 => inv("head_dim", 63);
    seq_open_rejects_large_head_dim: open |s| s.cdw13 = 258 | 2 << 16 => inv("head_dim", 258);
    seq_open_rejects_zero_dim_group: open |s| s.cdw13 = 64 => inv("dim_group", 0);
    seq_open_rejects_large_dim_group: open |s| s.cdw13 = 64 | 16 << 16 => inv("dim_group", 16);
    seq_open_rejects_non_dividing_dim_group: open |s| s.cdw13 = 6 | 4 << 16 => inv("dim_group", 4);
    seq_open_rejects_cdw13_reserved: open |s| s.cdw13 |= 1 << 27 => res("cdw13[31:27]", s.cdw13 as u64);
    seq_open_rejects_a_3_bit_sketch: open |s| s.cdw14 = 3 << 16 => inv("sketch_bits", 3);
    seq_open_rejects_too_many_sinks: open |s| s.cdw14 = 65 => inv("sink", 65);
    seq_open_rejects_cdw15: open |s| s.cdw15 = 3 => res("cdw15", 3);

    seq_close_rejects_ndt: close |s| s.cdw10 = 1 => res("cdw10", 1);
    seq_close_rejects_cdw12: close |s| s.cdw12 = 1 => res("cdw12", 1);
    seq_close_rejects_cdw13: close |s| s.cdw13 = 1 => res("cdw13", 1);
    seq_close_rejects_cdw14: close |s| s.cdw14 = 1 => res("cdw14", 1);
    seq_close_rejects_cdw15: close |s| s.cdw15 = 1 => res("cdw15", 1);

    kv_append_rejects_zero_ndt: append |s| s.cdw10 = 0 => inv("ndt", 0);
    kv_append_rejects_cdw12_reserved: append |s| s.cdw12 |= 1 << 16 => res("cdw12[31:16]", s.cdw12 as u64);
    kv_append_rejects_zero_tokens: append |s| s.cdw14 = 0 => inv("tokens", 0);
    kv_append_rejects_cdw15: append |s| s.cdw15 = 1 => res("cdw15", 1);

    decode_submit_rejects_zero_ndt: dense |s| s.cdw10 = 0 => inv("ndt", 0);
    decode_submit_rejects_unknown_method: dense |s| s.cdw12 = 1 | 3 << 16 => ProtoError::UnsupportedMethod(3);
    decode_submit_rejects_reserved_flags: dense |s| s.cdw12 |= 32 << 24 => res("flags", 33);
    decode_submit_rejects_sketch_on_dense: dense |s| s.cdw12 |= 16 << 24 => inv("flags", 17);
    decode_submit_rejects_mean_on_dense: dense |s| s.cdw12 |= 8 << 24 => inv("flags", 9);
    decode_submit_rejects_fill_on_dense: dense |s| s.cdw12 |= 4 << 24 => inv("flags", 5);
    decode_submit_rejects_pages_without_pages: dense |s| s.cdw12 = 1 | 2 << 16 => inv("k (pages)", 0);
    decode_submit_rejects_pages_mass_over_one: dense |s| { s.cdw12 = 1 | 2 << 16; s.cdw15 = 4; s.cdw14 = 1001 } => inv("r (mass, thousandths)", 1001);
    decode_submit_rejects_dense_guard: dense |s| s.cdw12 |= 2 << 24 => inv("flags", 3);
    decode_submit_dense_rejects_r: dense |s| s.cdw14 = 1 => inv("r", 1);
    decode_submit_dense_rejects_local: dense |s| s.cdw14 = 1 << 16 => inv("local", 1);
    decode_submit_dense_rejects_k: dense |s| s.cdw15 = 1 => inv("k", 1);
    decode_submit_sparf_rejects_zero_r: sparf |s| s.cdw14 &= !0xFFFF => inv("r", 0);
    decode_submit_sparf_rejects_huge_r: sparf |s| s.cdw14 = 257 => inv("r", 257);
    decode_submit_sparf_rejects_zero_k: sparf |s| s.cdw15 = 0 => inv("k", 0);

    decode_fetch_rejects_zero_ndt: fetch |s| s.cdw10 = 0 => inv("ndt", 0);
    decode_fetch_rejects_cdw12_reserved: fetch |s| s.cdw12 |= 1 << 31 => res("cdw12[31:16]", s.cdw12 as u64);
    decode_fetch_rejects_cdw13: fetch |s| s.cdw13 = 1 => res("cdw13", 1);
    decode_fetch_rejects_cdw14: fetch |s| s.cdw14 = 1 => res("cdw14", 1);
    decode_fetch_rejects_cdw15: fetch |s| s.cdw15 = 1 => res("cdw15", 1);
}

#[test]
fn parse_errors_map_to_status() {
    use crate::Status;
    let mut s = open();
    s.cdw14 = 3 << 16;
    assert_eq!(
        VendorCommand::parse(&s).unwrap_err().status(),
        Status::INVALID_FIELD
    );
    let mut s = dense();
    s.cdw12 = 1 | 9 << 16;
    assert_eq!(
        VendorCommand::parse(&s).unwrap_err().status(),
        Status::UNSUPPORTED_METHOD
    );
}

fn mism(field: &'static str) -> impl Fn(ProtoError) -> bool {
    move |e: ProtoError| matches!(e, ProtoError::ShapeMismatch { field: f, .. } if f == field)
}

#[test]
fn shape_mismatches() {
    let a = KvAppend {
        layer: 4,
        ..KvAppend::new(7, 1, 0, 3, &SHAPE).unwrap()
    };
    assert!(a.check_shape(&SHAPE).is_err_and(mism("layer")));
    let a = KvAppend {
        ndt: 383,
        ..KvAppend::new(7, 1, 0, 3, &SHAPE).unwrap()
    };
    assert!(a.check_shape(&SHAPE).is_err_and(mism("ndt")));
    let d = DecodeSubmit {
        layer: 9,
        ..DecodeSubmit::parse(&dense()).unwrap()
    };
    assert!(d.check_shape(&SHAPE).is_err_and(mism("layer")));
    let d = DecodeSubmit {
        flags: DecodeFlags::NONE,
        ..DecodeSubmit::parse(&dense()).unwrap()
    };
    assert!(d.check_shape(&SHAPE).is_err_and(mism("ndt")));
    let d = DecodeSubmit {
        r: 65,
        ..DecodeSubmit::parse(&sparf()).unwrap()
    };
    assert!(d.check_shape(&SHAPE).is_err_and(mism("r")));
    assert_eq!(
        d.check_shape(&SHAPE).unwrap_err().status(),
        crate::Status::SHAPE_MISMATCH
    );
    let f = DecodeFetch {
        ndt: 1,
        ..DecodeFetch::new(7, 0, &SHAPE)
    };
    assert!(f.check_shape(&SHAPE).is_err_and(mism("ndt")));
    let f = DecodeFetch::new(7, 4, &SHAPE);
    assert!(f.check_shape(&SHAPE).is_err_and(mism("layer")));
}

#[test]
fn payload_sizes() {
    let a = KvAppend::new(1, 0, 0, 5, &SHAPE).unwrap();
    assert_eq!(a.payload_bytes(&SHAPE), 2 * 2 * 5 * 64 * 2);
    assert_eq!(a.ndt as u64 * 4, a.payload_bytes(&SHAPE));
    let rot = SeqShape {
        rotated: true,
        ..SHAPE
    };
    let a = KvAppend::new(1, 0, 0, 5, &rot).unwrap();
    assert_eq!(a.ndt as u64 * 4, 3 * 2 * 5 * 64 * 2);
    assert!(a.check_shape(&rot).is_ok());
    assert!(a.check_shape(&SHAPE).is_err_and(mism("ndt")));
    // Rotated sparf: q and q̃; k_new, v_new, k̃_new; the guard trailer.
    let both = DecodeFlags(DecodeFlags::APPEND_KV.0 | DecodeFlags::GUARD.0);
    let d = DecodeSubmit::sparf(1, 0, 0, both, 4, 0, 8, &rot);
    assert_eq!(d.ndt as u64 * 4, 2 * 8 * 64 * 2 + 3 * 2 * 64 * 2 + 8);
    assert!(d.check_shape(&SHAPE).is_err_and(mism("ndt")));
    // Rotated dense: no q̃, but k̃_new.
    let d = DecodeSubmit::dense(1, 0, 0, DecodeFlags::APPEND_KV, &rot);
    assert_eq!(d.ndt as u64 * 4, 8 * 64 * 2 + 3 * 2 * 64 * 2);
    let big = SeqShape {
        kv_heads: 255,
        head_dim: 256,
        ..SHAPE
    };
    assert_eq!(
        KvAppend::new(1, 0, 0, u32::MAX, &big),
        Err(inv("ndt", 4 * 255 * u32::MAX as u64 * 256 / 4))
    );
    let d = DecodeSubmit::parse(&sparf()).unwrap();
    assert_eq!(d.payload_bytes(&SHAPE), 8 * 64 * 2);
    assert_eq!(SHAPE.query_heads(), 8);
}

#[test]
fn method_and_flags() {
    assert_eq!(Method::DENSE.bit(), 1);
    assert_eq!(Method::SPARF.bit(), 2);
    assert_eq!(Method(16).bit(), 0);
    assert!(Method::PAGES.is_known() && Method::PAGES.bit() == 4);
    assert!(!Method(3).is_known());
    assert!(DecodeFlags::FILL.fill() && !DecodeFlags::GUARD.fill());
    assert!(DecodeFlags::APPEND_KV.append_kv());
    assert!(!DecodeFlags::NONE.append_kv());
    assert!(DecodeFlags::GUARD.guard() && !DecodeFlags::APPEND_KV.guard());
}

#[test]
fn guard_trailer() {
    let g = GuardTrailer {
        alpha_min_milli: 600,
        k_cap: 300,
    };
    let b = g.to_bytes();
    assert_eq!(b, [0x58, 0x02, 0, 0, 0x2C, 0x01, 0, 0]);
    assert_eq!(GuardTrailer::parse(&b), Ok(g));
    assert!(GuardTrailer::parse(&b[..7]).is_err());
    let mut bad = b;
    bad[0..2].copy_from_slice(&1001u16.to_le_bytes());
    assert_eq!(GuardTrailer::parse(&bad), Err(inv("alpha_min_milli", 1001)));
    let mut bad = b;
    bad[2] = 1;
    assert!(matches!(
        GuardTrailer::parse(&bad),
        Err(ProtoError::Reserved { .. })
    ));
    let mut bad = b;
    bad[4..].fill(0);
    assert_eq!(GuardTrailer::parse(&bad), Err(inv("k_cap", 0)));
    use std::string::ToString;
    assert_eq!(Method::SPARF.to_string(), "sparf");
    assert_eq!(Method(5).to_string(), "method 5");
}

#[test]
fn decode_report_layout() {
    use core::mem::offset_of;
    assert_eq!(offset_of!(DecodeReport, pages_read), 4);
    assert_eq!(offset_of!(DecodeReport, pages_skipped), 8);
    assert_eq!(offset_of!(DecodeReport, engine_bytes), 16);
    assert_eq!(offset_of!(DecodeReport, elements_filtered), 24);
    let r = DecodeReport {
        tokens_attended: 1,
        pages_read: 2,
        pages_skipped: 3,
        guard_widened: 0,
        engine_bytes: 4,
        elements_filtered: 5,
    };
    let b = r.to_bytes();
    assert_eq!(b[16], 4);
    assert_eq!(b[24], 5);
    assert_eq!(DecodeReport::from_bytes(&b), Ok(r));
    assert!(DecodeReport::from_bytes(&b[..31]).is_err());
}

fn shape_strategy() -> impl Strategy<Value = SeqShape> {
    (1u16.., 1u8.., 1u8.., 1u16..=128, any::<bool>()).prop_flat_map(
        |(layers, kv_heads, group, half, rotated)| {
            let head_dim = half * 2;
            let divisors: Vec<u8> = (1..=8).filter(|m| head_dim % *m as u16 == 0).collect();
            proptest::sample::select(divisors).prop_map(move |dim_group| SeqShape {
                layers,
                kv_heads,
                group,
                head_dim,
                dim_group,
                rotated,
                placement: crate::vendor::Placement::TIME,
            })
        },
    )
}

proptest! {
    #[test]
    fn seq_open_round_trip(seq: u32, shape in shape_strategy()) {
        let c = SeqOpen::new(seq, shape);
        prop_assert_eq!(SeqOpen::parse(&c.to_sqe()), Ok(c));
        prop_assert_eq!(c.shape(), shape);
        let wire = Sqe::from_bytes(&c.to_sqe().to_bytes()).unwrap();
        prop_assert_eq!(VendorCommand::parse(&wire), Ok(VendorCommand::SeqOpen(c)));
    }

    #[test]
    fn seq_close_round_trip(seq: u32) {
        let c = SeqClose { seq };
        prop_assert_eq!(VendorCommand::parse(&c.to_sqe()), Ok(c.into()));
    }

    #[test]
    fn kv_append_round_trip(seq: u32, layer: u16, first_pos: u32, tokens in 1u32..=16_384, shape in shape_strategy()) {
        let c = KvAppend::new(seq, layer, first_pos, tokens, &shape).unwrap();
        prop_assert_eq!(VendorCommand::parse(&c.to_sqe()), Ok(c.into()));
        prop_assert_eq!(c.check_shape(&shape).is_ok(), layer < shape.layers);
    }

    #[test]
    fn decode_submit_round_trip(
        seq: u32, layer: u16, position: u32, append: bool, sparse: bool, guard: bool,
        r in 1u16..=256, local: u16, k in 1u32.., shape in shape_strategy(),
    ) {
        let mut flags = if append { DecodeFlags::APPEND_KV } else { DecodeFlags::NONE };
        if sparse && guard {
            flags.0 |= DecodeFlags::GUARD.0;
        }
        let c = if sparse {
            DecodeSubmit::sparf(seq, layer, position, flags, r, local, k, &shape)
        } else {
            DecodeSubmit::dense(seq, layer, position, flags, &shape)
        };
        prop_assert_eq!(VendorCommand::parse(&c.to_sqe()), Ok(c.into()));
        let ok = layer < shape.layers && (!sparse || r <= shape.head_dim);
        prop_assert_eq!(c.check_shape(&shape).is_ok(), ok);
    }

    #[test]
    fn decode_fetch_round_trip(seq: u32, layer: u16, shape in shape_strategy()) {
        let c = DecodeFetch::new(seq, layer, &shape);
        prop_assert_eq!(VendorCommand::parse(&c.to_sqe()), Ok(c.into()));
        prop_assert_eq!(c.ndt as u64 * 4, DecodeFetch::payload_bytes(&shape));
    }

    #[test]
    fn decode_report_round_trip(raw in proptest::array::uniform32(any::<u8>())) {
        prop_assert_eq!(DecodeReport::from_bytes(&raw).unwrap().to_bytes(), raw);
    }

    #[test]
    fn parse_never_panics(words in proptest::array::uniform16(any::<u32>()), op in 0x80u8..0x88) {
        let mut raw = [0u8; 64];
        for (i, w) in words.iter().enumerate() {
            raw[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        let mut s = Sqe::from_bytes(&raw).unwrap();
        s.set_opcode(Opcode(op));
        if let Ok(c) = VendorCommand::parse(&s) {
            // Whatever parses re-encodes to the same command fields.
            let mut t = c.to_sqe();
            t.cdw0 = s.cdw0;
            t.nsid = s.nsid;
            t.prp1 = s.prp1;
            t.prp2 = s.prp2;
            prop_assert_eq!(t, s);
        }
    }
}

/// A valid SQE of each layout, in [`LAYOUTS`] order.
fn sample(layout: &CommandLayout) -> Sqe {
    match layout.opcode {
        Opcode::SEQ_OPEN => open(),
        Opcode::SEQ_CLOSE => close(),
        Opcode::KV_APPEND => append(),
        Opcode::DECODE_SUBMIT => sparf(),
        _ => fetch(),
    }
}

fn dword_mut(s: &mut Sqe, dword: u8) -> &mut u32 {
    match dword {
        10 => &mut s.cdw10,
        11 => &mut s.cdw11,
        12 => &mut s.cdw12,
        13 => &mut s.cdw13,
        14 => &mut s.cdw14,
        _ => &mut s.cdw15,
    }
}

#[test]
fn every_reserved_bit_is_rejected() {
    let mut counts = Vec::new();
    for layout in LAYOUTS {
        let mut count = 0;
        for dword in 10..=15u8 {
            let mask = layout.reserved_mask(dword);
            for bit in (0..32).filter(|b| mask & 1 << b != 0) {
                let mut s = sample(layout);
                *dword_mut(&mut s, dword) |= 1 << bit;
                let value = *dword_mut(&mut s, dword) as u64;
                match VendorCommand::parse(&s) {
                    Err(ProtoError::Reserved { field, value: v }) => {
                        assert!(field.starts_with(std::format!("cdw{dword}").as_str()));
                        assert_eq!(v, value);
                    }
                    other => panic!("{} cdw{dword} bit {bit}: {other:?}", layout.name()),
                }
                count += 1;
            }
        }
        counts.push((layout.name(), count));
    }
    assert_eq!(
        counts,
        [
            ("SEQ_OPEN", 32 + 5 + 32),
            ("KV_APPEND", 16 + 32),
            ("SEQ_CLOSE", 5 * 32),
            ("DECODE_SUBMIT", 0),
            ("DECODE_FETCH", 16 + 3 * 32),
        ]
    );
}

#[test]
fn reserved_names() {
    let names = |l: &'static CommandLayout, s: Sqe| {
        let mut out = Vec::new();
        for dword in 10..=15u8 {
            if l.reserved_mask(dword) != 0 {
                let mut t = s;
                *dword_mut(&mut t, dword) |= l.reserved_mask(dword);
                if let Err(ProtoError::Reserved { field, .. }) = VendorCommand::parse(&t) {
                    out.push(field);
                }
            }
        }
        out
    };
    assert_eq!(
        names(SeqOpen::LAYOUT, open()),
        ["cdw10", "cdw13[31:27]", "cdw15"]
    );
    assert_eq!(names(KvAppend::LAYOUT, append()), ["cdw12[31:16]", "cdw15"]);
    assert_eq!(
        names(DecodeFetch::LAYOUT, fetch()),
        ["cdw12[31:16]", "cdw13", "cdw14", "cdw15"]
    );
}

#[test]
fn rows_cover_every_bit_once() {
    for layout in LAYOUTS {
        let mut seen = [0u32; 6];
        let mut fields = 0;
        for row in layout.rows() {
            let d = (row.dword - 10) as usize;
            assert_eq!(seen[d] & row.bits.mask(), 0, "{}", layout.name());
            seen[d] |= row.bits.mask();
            match row.field {
                Some(f) => {
                    fields += 1;
                    assert_eq!((f.dword, f.bits), (row.dword, row.bits));
                    assert_eq!(layout.reserved_mask(row.dword) & row.bits.mask(), 0);
                }
                None => assert_eq!(
                    layout.reserved_mask(row.dword) & row.bits.mask(),
                    row.bits.mask()
                ),
            }
        }
        assert_eq!(seen, [u32::MAX; 6], "{}", layout.name());
        assert_eq!(fields, layout.fields.len());
    }
    assert_eq!(layout_rows().count(), 16 + 7 + 6 + 9 + 7);
}

#[test]
fn layout_table_rows() {
    use std::string::ToString;
    let table = LayoutTable.to_string();
    assert!(table.contains("| SEQ_OPEN | 80h | cdw13 | 24 | `rotated` | The sequence is rotated:"));
    assert!(table.contains("| SEQ_OPEN | 80h | cdw13 | 31:27 | reserved |"));
    assert!(table.contains("| SEQ_OPEN | 80h | cdw14 | 7:0 | `sink` |"));
    assert!(table.contains("| DECODE_SUBMIT | 85h | cdw12 | 31:24 | `flags` |"));
    assert!(table.contains("| DECODE_SUBMIT | 85h | cdw14 | 31:16 | `local` |"));
    assert_eq!(table.lines().count(), 2 + layout_rows().count());
}

#[test]
fn layout_of_parsed_command() {
    for s in all() {
        let c = VendorCommand::parse(&s).unwrap();
        assert_eq!(c.layout().opcode, s.opcode());
    }
}

proptest! {
    /// Builder and field reader are inverse on every bit a field owns: any
    /// dwords with the reserved bits cleared read into a command that
    /// encodes back to the same dwords.
    #[test]
    fn fields_round_trip(words in proptest::array::uniform6(any::<u32>()), which in 0usize..5) {
        let layout = LAYOUTS[which];
        let mut s = Sqe::new(layout.opcode);
        for (i, w) in words.into_iter().enumerate() {
            let dword = 10 + i as u8;
            *dword_mut(&mut s, dword) = w & !layout.reserved_mask(dword);
        }
        let mut t = match layout.opcode {
            Opcode::SEQ_OPEN => SeqOpen::fields_of(&s).to_sqe(),
            Opcode::SEQ_CLOSE => SeqClose::fields_of(&s).to_sqe(),
            Opcode::KV_APPEND => KvAppend::fields_of(&s).to_sqe(),
            Opcode::DECODE_SUBMIT => DecodeSubmit::fields_of(&s).to_sqe(),
            _ => DecodeFetch::fields_of(&s).to_sqe(),
        };
        t.nsid = 0;
        prop_assert_eq!(t, s);
    }
}
