"""A seccomp filter that keeps user namespaces out of bwrap sandboxes (libseccomp, through pyseccomp).

As root, bwrap runs without a user namespace (so it can bind workspaces below 0700 folders), which makes
its `--disable-userns` inapplicable: that option needs `--unshare-user`. A command that has dropped to the
sandbox uid could then still call `unshare -U` and be uid 0 of a fresh namespace, the usual first step
of a kernel exploit. The filter below refuses that in every mode; as a normal user `--disable-userns`
adds the kernel's own per-namespace limit on top.
"""

from __future__ import annotations

import errno
import functools
import tempfile

from sandboxes.base import SandboxError

#: clone(2)/unshare(2) flag for a new user namespace (linux/sched.h).
CLONE_NEWUSER = 0x10000000


@functools.lru_cache(maxsize=1)
def no_userns_bpf() -> bytes:
    """The compiled cBPF program bwrap's `--seccomp FD` loads; SandboxError when libseccomp is missing."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:  # pyseccomp loads libseccomp.so.2 when imported
        raise SandboxError(
            f"libseccomp is unavailable ({exc}); it keeps user namespaces out of bwrap sandboxes"
            " (apt-get install libseccomp2; pip install pyseccomp)"
        ) from exc
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    new_user = seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    filt.add_rule(seccomp.ERRNO(errno.EPERM), "unshare", new_user)
    filt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", new_user)
    # clone3 passes its flags in memory, which a seccomp filter cannot read. ENOSYS makes the C library
    # fall back to clone, whose flags are checked above (flatpak does the same).
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as fh:
        filt.export_bpf(fh)
        fh.seek(0)
        return fh.read()
