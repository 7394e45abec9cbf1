"""Text documents as editors hold them: lines, exact changes, positions in any ACP encoding.

What next edit suggestions and document sync (``document/*``, ``nes/*``) need on both sides of
the connection: the agent keeps the client's open documents, the client keeps the same text to
send changes against, and both count positions the way the two negotiated.

* :class:`TextDocument`: a line array (LSP's line breaks: ``\\n``, ``\\r\\n``, ``\\r``),
  changed in place by spans or by ACP ``TextDocumentContentChangeEvent`` lists (all or
  nothing), each applied change reported as a :class:`LineChange`; a size limit
  (:data:`DEFAULT_MAX_CHARS`).
* :class:`TextEdit`: a span replaced by a text, the edit of a next edit suggestion on both
  sides (the engine's ``SuggestedEdit``, the client's ``Suggestion``).
* :class:`Point` and :class:`Span`: places in code points (Python string indexes), what code
  works with; ``TextDocument.point_of`` / ``position_of`` (``span_of`` / ``range_of``)
  convert to and from ACP ``Position`` / ``Range`` in a :data:`PositionEncoding`
  (``utf-16``, the default, ``utf-8`` or ``utf-32``).
* :class:`DocumentError` (an ``InvalidParams``, -32602, with ``data.reason``): a line past the
  end, an offset inside a character (a surrogate pair, a UTF-8 sequence), a reversed range, a
  document too large. A column past a line's end is that line's end (LSP), not an error.

Sits on :mod:`accord.errors` and :mod:`accord.schema` (the ``Position`` / ``Range`` models);
used by the agent runtime (:mod:`accord.agent`), the client (:mod:`accord.client`) and the
engine contract (:mod:`accord.engines`).
"""

from ._points import POSITION_ENCODINGS as POSITION_ENCODINGS
from ._points import DocumentError as DocumentError
from ._points import DocumentErrorReason as DocumentErrorReason
from ._points import Point as Point
from ._points import PositionEncoding as PositionEncoding
from ._points import Span as Span
from ._points import TextEdit as TextEdit
from ._points import column_of as column_of
from ._points import units_of as units_of
from ._text import DEFAULT_MAX_CHARS as DEFAULT_MAX_CHARS
from ._text import LineChange as LineChange
from ._text import TextDocument as TextDocument
from ._text import split_lines as split_lines

__all__ = (
    "DEFAULT_MAX_CHARS",
    "POSITION_ENCODINGS",
    "DocumentError",
    "DocumentErrorReason",
    "LineChange",
    "Point",
    "PositionEncoding",
    "Span",
    "TextDocument",
    "TextEdit",
    "column_of",
    "split_lines",
    "units_of",
)
