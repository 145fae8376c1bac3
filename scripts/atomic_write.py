"""Writing a file whole or not at all, as Zeroth's C side does
(src/core/fileio.c, zt_write_file_atomic): a temporary file beside it,
fsync, rename over the old one, then fsync of the folder so that the rename
itself outlasts a crash. A reader sees the old file or the new one, never
part of either. Standard library only."""
import os
import tempfile


def write_atomic(path, data):
    """Writes data (bytes, or str as UTF-8) to path. On an OSError the
    temporary file is removed, the old file is left as it was, and the
    error is raised again."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".tmp.")
    try:
        with os.fdopen(fd, "wb") as f:
            # the mode a plain open gives (mkstemp's is 0600), as the C
            # side's 0666 under the umask
            mask = os.umask(0)
            os.umask(mask)
            os.fchmod(f.fileno(), 0o666 & ~mask)
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
