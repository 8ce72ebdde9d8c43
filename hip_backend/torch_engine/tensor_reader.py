"""Getting safetensors data into tensors without an extra full-size copy.

On the CPU a tensor is a view of a private (copy-on-write) mapping of its file,
as `safetensors.torch.load_file` makes them: nothing is read until first use,
like MLX's lazy load, and a page counts in the resident set once, when touched.
Where a tensor must be assembled from pieces (per-expert checkpoints) its bytes
are read with plain `readinto` into the final tensor. On a GPU, chunks are read
into two pinned staging buffers and uploaded while the next chunk is read.
Byte ranges were validated against the header and the file size beforehand
(`manifest.py`); a file truncated after that would fault the measuring process,
which the launcher reports as killed.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.regular_file import open_regular
from hip_backend.errors import BadModelError, OutOfMemoryError
from hip_backend.model.manifest import StoredTensor

if TYPE_CHECKING:
    import torch

STAGING_BYTES = 64 << 20


def _writable_view(address: int, nbytes: int) -> memoryview:
    """A writable byte view of host memory owned by a live tensor."""
    return memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")


def _read_exact(fh: FileIO, offset: int, view: memoryview, what: str) -> None:
    fh.seek(offset)
    done = 0
    total = len(view)
    while done < total:
        n = fh.readinto(view[done:])
        if not n:
            raise BadModelError(f"{what}: file ended {total - done} bytes early")
        done += n


class TensorReader:
    """Fills tensors from their byte ranges; keeps files open across tensors."""

    def __init__(self, device: torch.device, staging_bytes: int = STAGING_BYTES) -> None:
        self.device = device
        self._files: dict[Path, FileIO] = {}
        self._maps: dict[Path, mmap.mmap] = {}
        self._released: list[tuple[int, int]] = []
        self._staging: list[Any] = []
        self._events: list[Any] = []
        self._staging_bytes = staging_bytes
        self.bytes_read = 0

    def _file(self, path: Path) -> FileIO:
        fh = self._files.get(path)
        if fh is None:
            try:
                raw = open_regular(path).detach()
                assert isinstance(raw, FileIO)
                fh = raw
            except OSError as exc:
                raise BadModelError(f"{path}: {exc.strerror or exc}") from None
            self._files[path] = fh
        return fh

    def mapped(self, stored: StoredTensor, dtype: torch.dtype) -> torch.Tensor:
        """A CPU tensor viewing `stored`'s bytes in a private mapping of its file."""
        import torch

        assert stored.file is not None
        if stored.nbytes == 0:
            return torch.empty(stored.shape, dtype=dtype)
        view = self._maps.get(stored.file)
        if view is None:
            fh = self._file(stored.file)
            try:
                view = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
            except OSError as exc:
                if exc.errno == errno.ENOMEM:
                    raise OutOfMemoryError(f"{stored.file}: no address space to map it") from None
                raise BadModelError(f"{stored.file}: cannot map the file ({exc})") from None
            self._maps[stored.file] = view
        flat = torch.frombuffer(view, dtype=torch.uint8, count=stored.nbytes, offset=stored.offset)
        self.bytes_read += stored.nbytes
        return flat.view(dtype).view(stored.shape)

    def release(self, tensor: torch.Tensor) -> None:
        """Note that a mapped tensor will never be read again (its bytes were
        converted into a new tensor); `drop_released` gives its pages back."""
        self._released.append((tensor.data_ptr(), tensor.data_ptr() + tensor.nbytes))

    def drop_released(self) -> int:
        """Unmap the pages that lie wholly inside released tensors; returns the bytes.

        A page touched through the private mapping stays resident as long as the
        mapping lives (the tensors that still view it keep it alive), so a converted
        tensor would count twice. Only whole pages inside the union of released byte
        ranges go, so no byte another tensor still uses (or wrote) is touched."""
        import torch

        page = mmap.PAGESIZE
        bases = [
            (torch.frombuffer(view, dtype=torch.uint8, count=1).data_ptr(), len(view), view)
            for view in self._maps.values()
        ]
        dropped = 0
        for start, end in _merged(self._released):
            first, last = -(-start // page) * page, end // page * page
            for base, size, view in bases:
                if last > first and base <= first and last <= base + size:
                    view.madvise(mmap.MADV_DONTNEED, first - base, last - first)
                    dropped += last - first
        self._released.clear()
        return dropped

    def read_into(self, stored: StoredTensor, dest: torch.Tensor) -> None:
        """Copy `stored`'s bytes into `dest` (contiguous, same byte size)."""
        assert stored.file is not None
        if dest.numel() * dest.element_size() != stored.nbytes or not dest.is_contiguous():
            raise BadModelError(f"tensor {stored.name!r}: destination does not match its bytes")
        fh = self._file(stored.file)
        what = f"{stored.file.name} ({stored.name})"
        try:
            if dest.device.type == "cpu":
                if stored.nbytes:
                    _read_exact(
                        fh, stored.offset, _writable_view(dest.data_ptr(), stored.nbytes), what
                    )
            else:
                self._read_staged(fh, stored, dest, what)
        except OSError as exc:
            raise BadModelError(f"{what}: {exc.strerror or exc}") from None
        self.bytes_read += stored.nbytes

    def _read_staged(self, fh: FileIO, stored: StoredTensor, dest: torch.Tensor, what: str) -> None:
        import torch

        if not self._staging:
            for _ in range(2):  # double buffering: read one chunk while the other uploads
                self._staging.append(
                    torch.empty(self._staging_bytes, dtype=torch.uint8, pin_memory=True)
                )
                self._events.append(None)
        flat = dest.view(-1).view(torch.uint8)
        pos, slot = 0, 0
        while pos < stored.nbytes:
            n = min(self._staging_bytes, stored.nbytes - pos)
            buf = self._staging[slot]
            if self._events[slot] is not None:
                self._events[slot].synchronize()
            _read_exact(fh, stored.offset + pos, _writable_view(buf.data_ptr(), n), what)
            flat[pos : pos + n].copy_(buf[:n], non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record()
            self._events[slot] = event
            pos += n
            slot ^= 1

    def close(self) -> None:
        """Wait for uploads and close files (mapped tensors keep their mappings alive)."""
        for event in self._events:
            if event is not None:
                event.synchronize()
        self._staging.clear()
        self._events.clear()
        for fh in self._files.values():
            fh.close()
        self._files.clear()


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges with touching or overlapping ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
