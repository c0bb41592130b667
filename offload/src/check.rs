//! The argument checks every backend makes before it sends anything:
//! lengths against the sequence's shape, finite values, something to
//! attend over.

use host_driver::backend::ModelShape;

use crate::{OffloadError, Step, Values};

/// K and V of an append, `[kv_heads][n][d]` each: returns n.
pub(crate) fn kv(
    shape: &ModelShape,
    k: &Values<'_>,
    v: &Values<'_>,
) -> Result<usize, OffloadError> {
    let row = shape.kv_heads * shape.head_dim;
    if k.is_empty() || !k.len().is_multiple_of(row) || v.len() != k.len() {
        return Err(OffloadError::invalid(format!(
            "k and v must both be [kv_heads = {}, tokens, d = {}]: got {} and {} elements",
            shape.kv_heads,
            shape.head_dim,
            k.len(),
            v.len()
        )));
    }
    k.check_finite("k")?;
    v.check_finite("v")?;
    Ok(k.len() / row)
}

/// One decode step over a layer holding `len` tokens: returns the tokens
/// it attends over.
pub(crate) fn step(shape: &ModelShape, len: usize, st: &Step<'_>) -> Result<usize, OffloadError> {
    let d = shape.head_dim;
    if st.q.len() != shape.q_heads * d {
        return Err(OffloadError::invalid(format!(
            "q must be [q_heads = {}, d = {d}]: got {} elements",
            shape.q_heads,
            st.q.len()
        )));
    }
    st.q.check_finite("q")?;
    if let Some((k, v)) = st.kv_new {
        for (what, x) in [("k_new", k), ("v_new", v)] {
            if x.len() != shape.kv_heads * d {
                return Err(OffloadError::invalid(format!(
                    "{what} must be [kv_heads = {}, d = {d}]: got {} elements",
                    shape.kv_heads,
                    x.len()
                )));
            }
            x.check_finite(what)?;
        }
    }
    let tokens = len + usize::from(st.kv_new.is_some());
    if tokens == 0 {
        return Err(OffloadError::invalid(format!(
            "sequence {} layer {} holds no token and the step brings none",
            st.seq, st.layer
        )));
    }
    Ok(tokens)
}
