//! NumPy arrays in and out. Inputs are float16 or float32 arrays of the
//! shape a call names; anything else is a `TypeError` (dtype) or an
//! `InvalidArgument` (shape). C-contiguous arrays are read in place;
//! others are copied once.

use std::borrow::Cow;

use half::f16;
use half::slice::HalfFloatSliceExt;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use offload::{OffloadError, Values};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A float16 or float32 array borrowed from Python.
pub enum Input<'py> {
    /// float16.
    F16(PyReadonlyArrayDyn<'py, f16>),
    /// float32.
    F32(PyReadonlyArrayDyn<'py, f32>),
}

impl<'py> Input<'py> {
    /// `obj` if it is a float16 or float32 NumPy array.
    pub fn extract(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Self> {
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f32>>() {
            return Ok(Self::F32(a));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f16>>() {
            return Ok(Self::F16(a));
        }
        let got = match obj.getattr("dtype") {
            Ok(d) => format!("an array of {d}"),
            Err(_) => format!("a {}", obj.get_type().name()?),
        };
        Err(PyTypeError::new_err(format!(
            "{what} must be a float16 or float32 numpy array, got {got}"
        )))
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Self::F16(a) => a.shape(),
            Self::F32(a) => a.shape(),
        }
    }

    /// Checks the shape against `want` (`None`: any size on that axis).
    pub fn check(
        &self,
        what: &str,
        names: &str,
        want: &[Option<usize>],
    ) -> Result<(), OffloadError> {
        let got = self.shape();
        let ok =
            got.len() == want.len() && got.iter().zip(want).all(|(g, w)| w.is_none_or(|w| w == *g));
        if ok {
            return Ok(());
        }
        let want: Vec<String> = want
            .iter()
            .map(|w| w.map_or("*".to_string(), |w| w.to_string()))
            .collect();
        Err(OffloadError::Invalid(format!(
            "{what} must have shape [{names}] = ({}), got {got:?}",
            want.join(", ")
        )))
    }

    /// The elements in C order: borrowed when contiguous.
    pub fn data(&self) -> Data<'_> {
        match self {
            // `as_slice` also lends Fortran-ordered memory: C order only.
            Self::F16(a) => Data::F16(match a.as_slice() {
                Ok(s) if a.is_c_contiguous() => Cow::Borrowed(s.reinterpret_cast()),
                _ => Cow::Owned(a.as_array().iter().map(|x| x.to_bits()).collect()),
            }),
            Self::F32(a) => Data::F32(match a.as_slice() {
                Ok(s) if a.is_c_contiguous() => Cow::Borrowed(s),
                _ => Cow::Owned(a.as_array().iter().copied().collect()),
            }),
        }
    }
}

/// An input's elements, to lend as [`Values`] (and across `detach`).
pub enum Data<'a> {
    /// fp16 bit patterns.
    F16(Cow<'a, [u16]>),
    /// f32.
    F32(Cow<'a, [f32]>),
}

impl Data<'_> {
    /// As [`Values`].
    pub fn values(&self) -> Values<'_> {
        match self {
            Self::F16(x) => Values::F16(x),
            Self::F32(x) => Values::F32(x),
        }
    }

    /// Elements `range` of it.
    pub fn part(&self, range: std::ops::Range<usize>) -> Values<'_> {
        self.values().part(range)
    }
}

/// `data` as a float32 array of `shape`.
pub fn output<'py>(
    py: Python<'py>,
    data: Vec<f32>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyArray1::from_vec(py, data)
        .reshape(shape.to_vec())?
        .into_any())
}
