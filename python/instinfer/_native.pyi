"""Type stubs of the native module (``instinfer._native``)."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

Array = npt.NDArray[Union[np.float16, np.float32]]
Report = Dict[str, Any]
"""``{"virtual_ns": int | None, "steps": [{"seq", "tokens", "tokens_attended",
"pages_read", "pages_skipped", "guard_widened", "engine_bytes",
"elements_filtered"}, ...]}``"""

class Error(Exception):
    """Every error of the package."""

    code: int
    """The C API's error number (``INSTINFER_E*``)."""
    nvme_status: Optional[int]
    """A drive's refusal: the NVMe status field (SCT << 8 | SC, DNR bit 14)."""
    command: Optional[str]
    """A drive's refusal: the command it refused."""

class InvalidArgument(Error, ValueError):
    """A shape, length, name or range the call cannot take."""

class SequenceError(Error, KeyError):
    """A sequence not open or already open, or an unknown batch."""

class DeviceError(Error):
    """The drive completed a command with an error status."""

class TransportError(Error):
    """A command could not be moved to or from the drive."""

class StorageError(Error):
    """The SSD store failed."""

class Pending:
    """A submitted decode batch; give it to ``fetch`` of its device."""

    @property
    def seqs(self) -> List[int]: ...

def open(
    devices: Union[str, Sequence[str], None] = None,
    count: int = 1,
    page_size: int = 4096,
) -> Device:
    """Opens drives by spec (``sim``, ``qemu:zynqmp``, ``tcp://HOST:PORT/NQN``,
    ``/dev/ngXnY``, ``vfio:<PCI address>``); ``count`` repeats one spec.
    KV heads are split over the drives in order."""

DENSE_EPS: float
"""ε of the engine's dense error bound."""
SPARF_EPS: float
"""ε of the engine's SparF error bound (same selection as the reference)."""

def error_bound(eps: float, max_abs_v: float) -> float:
    """The engine's bound on |drive − reference| per output element against
    a float64 reference on the same fp16 inputs: ``eps · max|V| + 2^−13``."""

def methods() -> List[Tuple[str, str]]:
    """Every method name with a line on what it does."""

def open_ssd(
    location: str,
    layers: int,
    q_heads: int,
    kv_heads: int,
    head_dim: int,
    capacity: int,
    *,
    slots: int = 1,
    block: int = 32,
    prefetch: int = 1,
    name: str = "instinfer",
) -> Device:
    """The SSD block-sparse backend as a ``Device``: a KV store at
    ``location`` (an existing directory, ``/dev/nvmeXnY`` or ``dram``) for
    sequences of this shape; attention on the host, methods ``dense`` and
    ``block``, each batch computed on the store's thread once submitted."""

class Device:
    """Drives holding sequences' KV caches and running decode attention, or
    the SSD backend (``open_ssd``) behind the same calls."""

    @property
    def specs(self) -> List[str]:
        """The drives' specs (empty for the SSD backend)."""
    @property
    def path(self) -> Optional[str]:
        """The SSD backend's store file (None for drives and in DRAM)."""
    def io_bytes(self) -> Tuple[int, int]:
        """The SSD backend's bytes read from and written to its drive."""
    def identify(self) -> List[Dict[str, Any]]:
        """Identify and the InstCSD capability block of every drive."""
    def stats(self) -> List[Dict[str, int]]:
        """The statistics log of every drive."""
    def virtual_clock_ns(self) -> List[Optional[int]]:
        """Each drive's virtual clock (simulated drives; None for real ones)."""
    def open_sequence(
        self,
        seq: int,
        layers: int,
        q_heads: int,
        kv_heads: int,
        head_dim: int,
        *,
        basis: str = "raw",
        layout: str = "time",
        dim_group: int = 1,
    ) -> None:
        """Opens a sequence. ``basis`` ``pca``/``balanced`` for the SparF+
        methods in that basis; ``layout`` ``pages`` for the flash-aware
        ``pages`` method, ``quest`` for ``quest``."""
    def close_sequence(self, seq: int) -> None: ...
    def sequences(self) -> List[int]: ...
    def length(self, seq: int, layer: int) -> int:
        """Tokens stored in a layer."""
    def append(self, seq: int, layer: int, k: Array, v: Array) -> int:
        """Appends ``[kv_heads, tokens, d]`` K and V (float16 or float32)."""
    def submit(
        self,
        layer: int,
        seqs: Union[int, Sequence[int]],
        q: Array,
        k_new: Optional[Array] = None,
        v_new: Optional[Array] = None,
        *,
        method: str = "dense",
        compression: float = 1.0,
        sparf: Optional[Tuple[int, int, int]] = None,
    ) -> Pending:
        """One layer's decode: ``seqs`` an int with q ``[q_heads, d]``, or a
        list with q ``[batch, q_heads, d]``; ``k_new``/``v_new``
        ``[(batch,) kv_heads, d]`` are stored first. ``sparf=(r, k, local)``
        sets SparF's parameters by hand."""
    def fetch(self, pending: Pending) -> Tuple[npt.NDArray[np.float32], Report]:
        """Outputs (float32, q's shape) and the batch's report."""
    def decode(
        self,
        layer: int,
        seqs: Union[int, Sequence[int]],
        q: Array,
        k_new: Optional[Array] = None,
        v_new: Optional[Array] = None,
        *,
        method: str = "dense",
        compression: float = 1.0,
        sparf: Optional[Tuple[int, int, int]] = None,
    ) -> Tuple[npt.NDArray[np.float32], Report]:
        """``submit`` then ``fetch``."""
    def time_rust_decode(
        self,
        layer: int,
        seqs: Union[int, Sequence[int]],
        q: Array,
        iters: int,
        *,
        method: str = "dense",
        compression: float = 1.0,
    ) -> float:
        """Benchmark helper: seconds per decode made in a Rust loop."""
    def close(self) -> None:
        """Closes every open sequence."""
    def __enter__(self) -> Device: ...
    def __exit__(self, *args: Any) -> bool: ...
