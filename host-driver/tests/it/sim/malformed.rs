//! Every vendor command with malformed fields gets an NVMe error status,
//! never a panic or a hang, and the device keeps serving: a valid decode
//! after all of them still equals the engine model.

use super::{Problem, SimDevice, device};
use attention::shape::Method;
use host_driver::transport::{IoData, IoRequest, Transport};
use proto::{
    DecodeFetch, DecodeFlags, DecodeSubmit, KvAppend, Opcode, SeqClose, SeqOpen, Sqe, Status,
};

/// Sends one raw command and returns its completion status and DW0.
fn raw(dev: &mut SimDevice, sqe: Sqe, data: IoData) -> (Status, u32) {
    let t = dev.transport_mut();
    let cid = t.submit(IoRequest { sqe, data }).expect("submit");
    loop {
        let (got, res) = t.reap().expect("reap");
        if got == cid {
            return (res.cqe.status(), res.cqe.dw0);
        }
    }
}

fn admin(dev: &mut SimDevice, sqe: Sqe, data: IoData) -> Status {
    dev.transport_mut()
        .admin(IoRequest { sqe, data })
        .expect("admin")
        .cqe
        .status()
}

#[test]
fn malformed_commands_get_statuses_and_the_device_keeps_serving() {
    let mut dev = device(4096);
    let p = Problem::structured(1, 3, 3, 40, 64);
    let shape = p.shape(2);
    dev.open(1, shape).unwrap();
    dev.append(1, 0, 0, &p.k, &p.v).unwrap();
    let d = p.d;
    let kv_bytes = |tokens: usize| vec![0u8; 2 * p.kv_heads * tokens * d * 2];
    let q_bytes = vec![0u8; p.q_heads() * d * 2];
    let mut cases: Vec<(&str, Status, Sqe, IoData)> = Vec::new();

    // SEQ_OPEN.
    let open = SeqOpen::new(2, shape).to_sqe();
    let mut s = open;
    s.cdw13 |= 1 << 30;
    cases.push((
        "open: reserved bits",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw12 &= !0xFFFF;
    cases.push(("open: zero layers", Status::INVALID_FIELD, s, IoData::None));
    let mut s = open;
    s.cdw13 = (s.cdw13 & !0xFFFF) | 63;
    cases.push(("open: odd head_dim", Status::INVALID_FIELD, s, IoData::None));
    let mut s = open;
    s.cdw13 = (s.cdw13 & !0xFFFF) | 36;
    cases.push((
        "open: head_dim not whole 16-byte filter beats",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw13 = (s.cdw13 & !0xFFFF) | 4;
    cases.push((
        "open: page holds more tokens than the filter rows",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw13 = (s.cdw13 & !(0xFF << 16)) | (3 << 16);
    cases.push((
        "open: m does not divide d",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw12 = (s.cdw12 & !(0xFF << 16)) | (200 << 16);
    cases.push((
        "open: too many KV heads",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw14 |= 3 << 16;
    cases.push((
        "open: a 3-bit key sketch",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    let mut s = open;
    s.cdw10 = 4;
    cases.push((
        "open: data length on a no-data command",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));
    cases.push((
        "open: existing sequence",
        Status::SEQ_EXISTS,
        SeqOpen::new(1, shape).to_sqe(),
        IoData::None,
    ));

    // SEQ_CLOSE.
    cases.push((
        "close: unknown sequence",
        Status::SEQ_NOT_OPEN,
        SeqClose { seq: 99 }.to_sqe(),
        IoData::None,
    ));
    let mut s = SeqClose { seq: 1 }.to_sqe();
    s.cdw12 = 1;
    cases.push((
        "close: reserved dword",
        Status::INVALID_FIELD,
        s,
        IoData::None,
    ));

    // KV_APPEND.
    let append = KvAppend::new(1, 0, 40, 1, &shape).unwrap();
    let mut a = append;
    a.seq = 5;
    cases.push((
        "append: sequence not open",
        Status::SEQ_NOT_OPEN,
        a.to_sqe(),
        IoData::ToDevice(kv_bytes(1)),
    ));
    let mut a = append;
    a.layer = 3;
    cases.push((
        "append: layer out of range",
        Status::SHAPE_MISMATCH,
        a.to_sqe(),
        IoData::ToDevice(kv_bytes(1)),
    ));
    let mut a = append;
    a.first_pos = 12;
    cases.push((
        "append: gap",
        Status::POSITION_MISMATCH,
        a.to_sqe(),
        IoData::ToDevice(kv_bytes(1)),
    ));
    let mut a = append;
    a.ndt += 1;
    cases.push((
        "append: NDT disagrees",
        Status::SHAPE_MISMATCH,
        a.to_sqe(),
        IoData::ToDevice(kv_bytes(1)),
    ));
    let mut s = append.to_sqe();
    s.cdw14 = 0;
    cases.push((
        "append: zero tokens",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(kv_bytes(1)),
    ));
    let mut s = append.to_sqe();
    s.cdw0 |= 1 << 14;
    cases.push((
        "append: SGL requested",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(kv_bytes(1)),
    ));

    // DECODE_SUBMIT.
    let dense = DecodeSubmit::dense(1, 0, 39, DecodeFlags::NONE, &shape);
    let sparf = DecodeSubmit::sparf(1, 0, 39, DecodeFlags::NONE, 8, 4, 8, &shape);
    let mut s = dense.to_sqe();
    s.cdw12 |= 9 << 16;
    cases.push((
        "decode: unknown method",
        Status::UNSUPPORTED_METHOD,
        s,
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut s = sparf.to_sqe();
    s.cdw14 &= !0xFFFF;
    cases.push((
        "decode: r = 0",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut c = sparf;
    c.r = 65;
    cases.push((
        "decode: r > d",
        Status::SHAPE_MISMATCH,
        c.to_sqe(),
        IoData::ToDevice(q_bytes.clone()),
    ));
    let sketch = DecodeSubmit::pages(1, 0, 39, DecodeFlags::SKETCH, 1000, 1, 4, &shape);
    cases.push((
        "decode: pages by sketch on a sequence opened without one",
        Status::INVALID_FIELD,
        sketch.to_sqe(),
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut s = dense.to_sqe();
    s.cdw15 = 3;
    cases.push((
        "decode: dense with k",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut c = dense;
    c.position = 10;
    cases.push((
        "decode: wrong position",
        Status::POSITION_MISMATCH,
        c.to_sqe(),
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut s = dense.to_sqe();
    s.cdw12 |= 0x80 << 24;
    cases.push((
        "decode: reserved flag",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(q_bytes.clone()),
    ));
    let mut c = dense;
    c.ndt -= 1;
    cases.push((
        "decode: NDT disagrees",
        Status::SHAPE_MISMATCH,
        c.to_sqe(),
        IoData::ToDevice(q_bytes.clone()),
    ));

    // A bad guard trailer, with a new token that must not be stored.
    let guarded = DecodeFlags(DecodeFlags::APPEND_KV.0 | DecodeFlags::GUARD.0);
    let g = DecodeSubmit::sparf(1, 0, 40, guarded, 8, 4, 8, &shape);
    let body = [q_bytes.clone(), vec![0u8; 2 * p.kv_heads * d * 2]].concat();
    for (what, trailer) in [
        (
            "decode: guard alpha over 1000",
            [0xE9, 0x03, 0, 0, 16, 0, 0, 0],
        ),
        ("decode: guard k_cap 0", [0x58, 0x02, 0, 0, 0, 0, 0, 0]),
        (
            "decode: guard reserved bytes",
            [0x58, 0x02, 1, 0, 16, 0, 0, 0],
        ),
    ] {
        cases.push((
            what,
            Status::INVALID_FIELD,
            g.to_sqe(),
            IoData::ToDevice([body.clone(), trailer.to_vec()].concat()),
        ));
    }
    let mut s = dense.to_sqe();
    s.cdw12 |= u32::from(DecodeFlags::GUARD.0) << 24;
    cases.push((
        "decode: dense with the guard",
        Status::INVALID_FIELD,
        s,
        IoData::ToDevice(q_bytes.clone()),
    ));

    // DECODE_FETCH.
    let fetch = DecodeFetch::new(1, 0, &shape);
    let out_len = (fetch.ndt * 4) as usize;
    cases.push((
        "fetch: nothing submitted",
        Status::RESULT_NOT_READY,
        fetch.to_sqe(),
        IoData::FromDevice(out_len),
    ));
    let mut f = fetch;
    f.ndt += 3;
    cases.push((
        "fetch: NDT disagrees",
        Status::SHAPE_MISMATCH,
        f.to_sqe(),
        IoData::FromDevice(out_len + 12),
    ));
    let mut s = fetch.to_sqe();
    s.cdw13 = 1;
    cases.push((
        "fetch: reserved dword",
        Status::INVALID_FIELD,
        s,
        IoData::FromDevice(out_len),
    ));

    // Opcodes nobody implements.
    cases.push((
        "unknown vendor opcode",
        Status::INVALID_OPCODE,
        Sqe::new(Opcode(0x90)),
        IoData::None,
    ));
    cases.push((
        "NVM read",
        Status::INVALID_OPCODE,
        Sqe::new(Opcode(0x02)),
        IoData::FromDevice(4096),
    ));

    let n = cases.len() as u64;
    let errors_before = dev.stats().unwrap().errors;
    for (what, want, sqe, data) in cases {
        let (got, _) = raw(&mut dev, sqe, data);
        assert!(got.same_code(&want), "{what}: got {got}, want {want}");
    }

    // Admin side.
    let mut id = proto::identify_controller();
    id.cdw10 = 2;
    let got = admin(&mut dev, id, IoData::FromDevice(4096));
    assert!(
        got.same_code(&Status::INVALID_FIELD),
        "identify CNS 2: {got}"
    );
    let got = admin(
        &mut dev,
        proto::get_log_page(0x01, 512),
        IoData::FromDevice(512),
    );
    assert!(
        got.same_code(&Status::INVALID_LOG_PAGE),
        "log page 1: {got}"
    );
    let got = admin(&mut dev, Sqe::new(Opcode(0xC3)), IoData::None);
    assert!(
        got.same_code(&Status::INVALID_OPCODE),
        "vendor admin: {got}"
    );

    // The position error tells the host where the layer is.
    let mut a = append;
    a.first_pos = 0;
    let (st, dw0) = raw(&mut dev, a.to_sqe(), IoData::ToDevice(kv_bytes(1)));
    assert!(st.same_code(&Status::POSITION_MISMATCH));
    assert_eq!(dw0, 40);

    // Still serving, and nothing was changed by the rejected commands.
    let stats = dev.stats().unwrap();
    assert_eq!(stats.errors - errors_before, n + 3 + 1);
    assert_eq!(stats.open_sequences, 1);
    let t = dev
        .submit_decode(1, 0, 39, &p.q, None, Method::Dense)
        .unwrap();
    assert_eq!(dev.fetch(t).unwrap().raw, p.engine(Method::Dense));
}
