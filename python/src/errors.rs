//! The exceptions: `instinfer.Error` and its subclasses, each carrying
//! `code` (the C API's error number), and for a drive's refusal
//! `nvme_status` (the status field) and `command`.
//!
//! | class | raised for |
//! | --- | --- |
//! | `InvalidArgument` (also a `ValueError`) | shapes, lengths, names, ranges |
//! | `SequenceError` (also a `KeyError`) | a sequence not open, or already open; an unknown batch |
//! | `DeviceError` | the drive completed a command with an error status, or is no InstCSD drive |
//! | `TransportError` | the command could not be moved (link, socket, ioctl) |
//! | `StorageError` | the SSD store (I/O, a damaged file) |

use offload::OffloadError;
use pyo3::exceptions::{PyException, PyKeyError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    instinfer,
    Error,
    PyException,
    "Every error of the instinfer package."
);
pyo3::create_exception!(
    instinfer,
    DeviceError,
    Error,
    "A drive completed a command with an error status (nvme_status, command)."
);
pyo3::create_exception!(
    instinfer,
    TransportError,
    Error,
    "A command could not be moved to or from the drive."
);
pyo3::create_exception!(instinfer, StorageError, Error, "The SSD store failed.");

/// Classes with two bases are made in Python: see `register`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("TransportError", py.get_type::<TransportError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    // Subclasses of both Error and a built-in, so `except ValueError`
    // and `except KeyError` work as Python users expect.
    let builtins = py.import("builtins")?;
    let type_ = builtins.getattr("type")?;
    for (name, base) in [
        ("InvalidArgument", py.get_type::<PyValueError>()),
        ("SequenceError", py.get_type::<PyKeyError>()),
    ] {
        let bases = (py.get_type::<Error>(), base);
        let ns = pyo3::types::PyDict::new(py);
        ns.set_item("__module__", "instinfer")?;
        let cls = type_.call1((name, bases, ns))?;
        m.add(name, cls)?;
    }
    Ok(())
}

/// `e` as the Python exception of its kind, with its attributes.
pub fn to_py(py: Python<'_>, e: OffloadError) -> PyErr {
    let msg = e.to_string();
    let class = |name: &str| -> PyResult<Bound<'_, PyAny>> {
        py.import("instinfer._native")?.getattr(name)
    };
    let make = || -> PyResult<PyErr> {
        let cls = match &e {
            OffloadError::Invalid(_) => class("InvalidArgument")?,
            OffloadError::UnknownSequence(_)
            | OffloadError::SequenceExists(_)
            | OffloadError::UnknownBatch(_) => class("SequenceError")?,
            OffloadError::Status { .. } | OffloadError::Device(_) => {
                py.get_type::<DeviceError>().into_any()
            }
            OffloadError::Transport(_) => py.get_type::<TransportError>().into_any(),
            OffloadError::Storage(_) => py.get_type::<StorageError>().into_any(),
        };
        let value = cls.call1((msg.clone(),))?;
        value.setattr("code", e.code())?;
        value.setattr("nvme_status", e.nvme_status())?;
        value.setattr("command", e.command())?;
        Ok(PyErr::from_value(value))
    };
    make().unwrap_or_else(|err| err)
}

/// `Result<T, OffloadError>` into a `PyResult`.
pub trait IntoPy<T> {
    /// Converts the error with [`to_py`].
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, OffloadError> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
