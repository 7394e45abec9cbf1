"""Paths confined to a set of root directories, resolved and opened with no window for a swap.

:func:`confined` walks a path one component at a time on directory descriptors
(``O_NOFOLLOW``, symlinks read and walked the same way, ``..`` refused above a root), so a
peer that swaps a directory for a symlink meanwhile cannot make the final open, create or
rename land outside the roots. One implementation for both sides of accord: the client's
file-system host (``fs/read_text_file``, ``fs/write_text_file``) and the coder's own file
tools when the client offers none.

Above: :mod:`accord.client`, :mod:`accord.coder`. Below: :mod:`os`, :mod:`accord.errors`.
"""

from ._walk import MAX_SYMLINKS as MAX_SYMLINKS
from ._walk import Confined as Confined
from ._walk import Finish as Finish
from ._walk import confined as confined

__all__ = ("MAX_SYMLINKS", "Confined", "Finish", "confined")
