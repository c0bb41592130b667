//! Byte layouts of the vendor commands' data: fp16 bit patterns to
//! little-endian bytes, the per-chunk re-layout of KV_APPEND payloads, and
//! the decode output (Q14 i32) back to numbers.

/// Appends fp16 bit patterns as little-endian bytes.
pub fn put_f16(out: &mut Vec<u8>, bits: &[u16]) {
    out.reserve(bits.len() * 2);
    for b in bits {
        out.extend_from_slice(&b.to_le_bytes());
    }
}

/// KV_APPEND payload for tokens `t0..t1` of `blocks` (K, V, and K̃ for a
/// rotated sequence), each laid out `[kv_heads][n][d]`: K
/// `[kv_heads][t1-t0][d]`, then V the same, then K̃. The source is
/// head-major, so every chunk gathers one slice per head.
pub fn kv_chunk(
    blocks: &[&[u16]],
    kv_heads: usize,
    n: usize,
    d: usize,
    t0: usize,
    t1: usize,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * blocks.len() * kv_heads * (t1 - t0) * d);
    for &src in blocks {
        for h in 0..kv_heads {
            let base = h * n * d;
            put_f16(&mut out, &src[base + t0 * d..base + t1 * d]);
        }
    }
    out
}

/// Decodes little-endian i32 values (the length is a multiple of 4).
pub fn get_i32s(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_is_head_major_per_chunk() {
        // 2 heads, 3 tokens, d = 2: values encode (head, token, dim).
        let k: Vec<u16> = (0..12).collect();
        let v: Vec<u16> = (100..112).collect();
        let c = kv_chunk(&[&k, &v], 2, 3, 2, 1, 3);
        let words: Vec<u16> = c
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(
            words,
            vec![
                2, 3, 4, 5, 8, 9, 10, 11, 102, 103, 104, 105, 108, 109, 110, 111
            ]
        );
        assert_eq!(get_i32s(&[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), vec![1, -1]);
    }
}
