# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse Grid Engine command output into the cluster snapshot (docs/snapshot.md).

Target side, standard library only, Python >= 3.8.

Entry points:

* :func:`parse_qstat` -- ``qstat -u '*' -f -r -xml`` (and the non ``-f`` / non ``-r`` /
  ``-g d`` / ``-g t`` variants): queue instances, pending and running jobs.
* :func:`parse_qhost` -- ``qhost -q -xml`` (and ``qhost -xml``): execution hosts.
* :func:`build_snapshot` -- both of the above combined into ``ansible_facts.sge``.
* :func:`parse_qacct` / :func:`accounting_summary` -- ``qacct -j`` plain text.
* :func:`parse_qstat_j` / :func:`parse_qstat_gc` -- ``qstat -j ID -xml`` and ``qstat -g c -xml``
  (diagnostics; not part of the snapshot).

Every problem with the input raises :class:`SgeParseError` whose message names the command and
what is wrong. Job names, owners and every other value are data: they are never interpreted.

Performance: documents are parsed incrementally (``XMLPullParser``, end events only), each
record is read once when its end tag arrives and then cleared, so memory stays flat apart from
the result itself. Cyclic garbage collection is paused while parsing (ElementTree elements hold
no reference cycles; the collector would otherwise rescan millions of young objects).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import codecs
import collections
import contextlib
import gc
import itertools
import re
import time
from fnmatch import fnmatchcase
from xml.etree.ElementTree import ParseError, XMLPullParser

SNAPSHOT_SCHEMA = 1

# xmlns:xsd URL fragment -> flavour (see docs/snapshot.md)
FLAVOURS = (
    ("gridengine.sunsource.net", "SGE 6.2"),
    ("gridscheduler.svn.sourceforge.net", "OGS 2011.11"),
    ("arc.liv.ac.uk/repos/darcs/sge", "SoGE 8.1"),
    ("github.com/gridengine/gridengine", "UGE 8.0-8.5"),
    ("www.univa.com", "UGE 8.6"),
)
UNKNOWN_FLAVOUR = "unknown"

_CHUNK = 1 << 16

QSTAT = "qstat -xml"
QSTAT_J = "qstat -j -xml"
QSTAT_GC = "qstat -g c -xml"
QHOST = "qhost -xml"
QACCT = "qacct -j"


class SgeParseError(Exception):
    """Grid Engine output that cannot be read; the message names the command and the problem."""


# ---------------------------------------------------------------------------------------------
# document level helpers
# ---------------------------------------------------------------------------------------------

def _scan_prolog(data, command):
    """Return (root tag, xmlns:xsd value or None, whether the root's start tag is closed in
    ``data``) by scanning the bytes before the root element (a stream is read on until it is).

    Rejects DOCTYPE (and with it ENTITY) declarations before anything is parsed: Grid Engine
    never writes one, and entity expansion is the classic attack on XML parsers.
    Returns (None, None, False) when no root element is found; the parser then reports why.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise SgeParseError("%s: expected bytes, got %s" % (command, type(data).__name__))
    pos = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    size = len(data)
    while True:
        pos = data.find(b"<", pos)
        if pos < 0 or pos + 1 >= size:
            return None, None, False
        nxt = data[pos + 1:pos + 2]
        if nxt == b"?":
            end = data.find(b"?>", pos + 2)
            if end < 0:
                return None, None, False
            pos = end + 2
        elif nxt == b"!":
            if data[pos:pos + 4] == b"<!--":
                end = data.find(b"-->", pos + 4)
                if end < 0:
                    return None, None, False
                pos = end + 3
                continue
            decl = data[pos + 2:pos + 9].upper()
            if decl.startswith(b"DOCTYPE") or decl.startswith(b"ENTITY"):
                raise SgeParseError(
                    "%s: document type/entity declarations are not accepted (<!%s ...>); "
                    "Grid Engine never writes them" % (command, decl.decode("ascii", "replace")))
            # anything else is not well-formed; let the parser say where
            return None, None, False
        else:
            end = data.find(b">", pos)
            closed = end >= 0
            if end < 0:
                end = size
            head = data[pos + 1:end]
            name_end = len(head)
            for sep in (b" ", b"\t", b"\r", b"\n", b"/"):
                i = head.find(sep)
                if 0 <= i < name_end:
                    name_end = i
            tag = head[:name_end].decode("utf-8", "replace")
            xsd = None
            i = head.find(b"xmlns:xsd")
            if i >= 0:
                j = head.find(b"=", i)
                if j >= 0:
                    rest = head[j + 1:].lstrip()
                    quote = rest[:1]
                    if quote in (b'"', b"'"):
                        k = rest.find(quote, 1)
                        if k > 0:
                            xsd = rest[1:k].decode("utf-8", "replace")
            return tag, xsd, closed


def _prolog(data, command):
    """(root tag, xmlns:xsd value or None) of :func:`_scan_prolog`."""
    return _scan_prolog(data, command)[:2]


def detect_flavour(xsd):
    """Flavour name for an ``xmlns:xsd`` value; None when present but unrecognised."""
    if xsd is None:
        return UNKNOWN_FLAVOUR
    for fragment, name in FLAVOURS:
        if fragment in xsd:
            return name
    return None


def _check_root(data, command, expected, strict_schema):
    tag, xsd = _prolog(data, command)
    if tag is None:
        # no root element: empty document, only a declaration, or garbage; parse to find out
        _raise_for_document(data, command)
    if tag not in expected:
        raise SgeParseError("%s: root element is <%s>, expected <%s>"
                            % (command, tag, "> or <".join(expected)))
    flavour = detect_flavour(xsd)
    if flavour is None:
        if strict_schema:
            raise SgeParseError(
                "%s: unrecognised schema %r on <%s> (xmlns:xsd); not a known Grid Engine "
                "flavour" % (command, xsd, tag))
        flavour = UNKNOWN_FLAVOUR
    return tag, flavour


def _describe_parse_error(data, command, err):
    if not data.strip():
        return "%s: document is empty" % command
    msg = str(err)
    # "not well-formed (invalid token): line 1, column 0" -> keep the reason, format position
    reason = msg.split(": line ", 1)[0]
    line, column = getattr(err, "position", (None, None))
    if reason.startswith("no element found"):
        if _prolog(data, command)[0] is None:
            return "%s: no document element (line %s, column %s)" % (command, line, column)
        return ("%s: document ends before its root element is closed (line %s, column %s)"
                % (command, line, column))
    return "%s: %s (line %s, column %s)" % (command, reason, line, column)


def _feed(parser, data=None):
    """``parser.feed(data)`` (``parser.close()`` when ``data`` is None), with an XML declaration
    naming an encoding expat cannot read (unknown, or multi-byte such as UTF-16 declared on a
    byte document) reported as a ParseError like any other syntax error."""
    try:
        if data is None:
            parser.close()
        else:
            parser.feed(data)
    except (LookupError, ValueError) as err:
        error = ParseError("unsupported encoding in the XML declaration (%s)" % err)
        error.position = (1, 0)
        raise error


def _raise_for_document(data, command):
    """Called when no root element was found: raise the most precise error we can."""
    if not data.strip():
        raise SgeParseError("%s: document is empty" % command)
    parser = XMLPullParser(events=("end",))
    try:
        _feed(parser, data)
        _feed(parser)
    except ParseError as err:
        raise SgeParseError(_describe_parse_error(data, command, err))
    raise SgeParseError("%s: no document element" % command)


_CONTROL_CHARS = dict((i, u"\ufffd") for i in range(32) if chr(i) not in "\t\n\r")


def _sanitize(data):
    """Replace bytes that can never be XML data (invalid UTF-8, C0 controls) with U+FFFD.

    Used only after a parse failed with "invalid token": a job name submitted in Latin-1 or
    containing control characters is printed raw by Grid Engine and would otherwise make the
    whole listing unreadable. Returns None when there is nothing to replace.
    """
    text = data.decode("utf-8", "replace")
    clean = text.translate(_CONTROL_CHARS)
    if clean == text and u"\ufffd" not in text:
        return None
    return clean.encode("utf-8")


def _batches(pieces):
    """Yield the end events of the document made of the byte strings ``pieces``, as one list of
    (event, element) per piece fed to the parser.

    The events are taken from the parser's queue in one step instead of through
    ``read_events()``, a generator that costs about a microsecond per event (a quarter of the
    whole parse of a large listing). A syntax error is raised after the events before it, where
    ``read_events()`` raises it, or from feed() (an unsupported encoding) or close(): :func:`_run`
    catches it in each place.
    """
    parser = XMLPullParser(events=("end",))
    queue = getattr(parser, "_events_queue", None)
    if not isinstance(queue, collections.deque):  # pragma: no cover - another ElementTree
        for piece in pieces:
            _feed(parser, piece)
            yield parser.read_events()
        _feed(parser)
        yield parser.read_events()
        return
    for piece in itertools.chain(pieces, (None,)):
        _feed(parser, piece)
        if queue:
            batch = list(queue)
            queue.clear()
            if isinstance(batch[-1], Exception):  # feed() queues its error after the events
                error = batch.pop()
                yield batch
                raise error
            yield batch


def _events(data):
    """:func:`_batches` of ``data`` fed in slices of ``_CHUNK`` bytes."""
    return _stream_events((data,))


@contextlib.contextmanager
def _gc_paused():
    """Cyclic garbage collection paused for the block (see the module's docstring)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run(data, command, make_consumer):
    """Feed ``data`` through ``make_consumer()(batches)``; on an "invalid token" error retry
    once, with fresh state, on sanitised bytes (see :func:`_sanitize`)."""
    with _gc_paused():
        try:
            return make_consumer()(_events(data))
        except ParseError as err:
            if "invalid token" in str(err):
                clean = _sanitize(data)
                if clean is not None:
                    try:
                        return make_consumer()(_events(clean))
                    except ParseError:
                        pass
            raise SgeParseError(_describe_parse_error(data, command, err))


# streaming: a document parsed while the command still prints it (a 10,000-host listing is over
# 100 MB; holding it whole doubled the poll's peak memory)

_HEAD = 1 << 16
# an XML declaration naming its encoding: <?xml version='1.0' encoding='...'?>
_DECLARED = re.compile(br"\A(?:\xef\xbb\xbf)?[ \t\r\n]*<\?xml[^>]*?encoding[ \t\r\n]*=[ \t\r\n]*"
                       br"[\"']([A-Za-z0-9._-]*)[\"']")
_CONTROL_BYTES = bytes(bytearray(i for i in range(32) if chr(i) not in "\t\n\r"))


def _clean_chunks(chunks):
    """The chunks of a UTF-8 document with what :func:`_sanitize` replaces replaced on the way.

    A chunk of plain ASCII without C0 controls (nearly all of a listing) passes as it is; any other
    goes through an incremental decoder, so a character split between two chunks is read whole.
    The bytes that come out are those :func:`_sanitize` makes of the whole document, and the
    document itself when it has nothing to replace: a stream is read once, so it is read cleaned
    from the start instead of being read again after an "invalid token".
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        # (deleting the controls from a copy is 7x quicker than searching for them with re)
        control = len(chunk.translate(None, _CONTROL_BYTES)) != len(chunk)
        if not control and not decoder.getstate()[0] and chunk.isascii():
            yield chunk
        else:
            text = decoder.decode(chunk)
            if control:
                text = text.translate(_CONTROL_CHARS)  # (slow: only where there is one)
            yield text.encode("utf-8")
    tail = decoder.decode(b"", True)
    if tail:
        yield tail.encode("utf-8")


def _stream_events(chunks):
    """:func:`_batches` of the byte chunks ``chunks``, each fed in slices of ``_CHUNK`` bytes."""
    return _batches(chunk[off:off + _CHUNK] for chunk in chunks for off in range(0, len(chunk), _CHUNK))


def _parse_stream(chunks, command, expected, strict_schema, make_consumer):
    """Parse a document given as an iterable of byte chunks (a command's output as it arrives).

    Returns ``(flavour, make_consumer()(batches))``. The first ``_HEAD`` bytes are gathered to
    check the root element as :func:`_check_root` does; a document that ends by then, or that
    declares an encoding other than UTF-8, is read whole and parsed as bytes (:func:`_run`), so
    the result and every error are those of the bytes path. Otherwise the chunks are parsed as
    they come, cleaned on the way (:func:`_clean_chunks`), and never held together: memory holds
    one chunk and the result. Errors are SgeParseError, as for bytes.
    """
    chunks = iter(chunks)
    head = bytearray()
    ended = False
    while len(head) < _HEAD or not _scan_prolog(head, command)[2]:
        chunk = next(chunks, None)
        if chunk is None:
            ended = True
            break
        head += chunk
    # (the root's start tag is in the head, or the head is the whole document)
    _tag, flavour = _check_root(head, command, expected, strict_schema)
    declared = _DECLARED.match(head)
    if ended or (declared and declared.group(1).lower() not in (b"utf-8", b"utf8")):
        for chunk in chunks:
            head += chunk
        return flavour, _run(head, command, make_consumer)
    first = bytes(head)
    del head
    with _gc_paused():
        try:
            return flavour, make_consumer()(_stream_events(_clean_chunks(
                itertools.chain((first,), chunks))))
        except ParseError as err:
            raise SgeParseError(_describe_parse_error(first, command, err))


# ---------------------------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------------------------

_MONTHS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
           "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}


def parse_time(text):
    """Seconds since the epoch (float) for a Grid Engine time stamp, or None when empty.

    Accepted: ISO local time ``2019-05-15T13:16:51`` (optionally ``.123``), converted with
    ``time.mktime`` on the machine that parses (the qmaster); epoch seconds ``1541444183``;
    epoch milliseconds ``1592928409331`` (UGE >= 8.2; any value >= 1e11 is taken as ms);
    qacct's ``Wed Oct 24 20:22:31 2018`` and UGE's ``06/11/2020 13:22:28.652``.
    Raises ValueError for anything else.
    """
    if text is None:
        return None
    s = text.strip()
    if not s or s in ("-", "-/-"):
        return None
    if s.isdigit():
        v = int(s)
        if v == 0:
            return None
        return v / 1000.0 if v >= 100000000000 else float(v)
    frac = 0.0
    if len(s) >= 19 and s[4] == "-" and s[7] == "-" and s[10] in "T " and s[13] == ":":
        y, mo, d = int(s[0:4]), int(s[5:7]), int(s[8:10])
        hh, mm, ss = int(s[11:13]), int(s[14:16]), int(s[17:19])
        rest = s[19:]
    elif len(s) >= 19 and s[2] == "/" and s[5] == "/" and s[10] == " ":
        mo, d, y = int(s[0:2]), int(s[3:5]), int(s[6:10])
        hh, mm, ss = int(s[11:13]), int(s[14:16]), int(s[17:19])
        rest = s[19:]
    else:
        parts = s.split()
        if len(parts) != 5 or parts[1] not in _MONTHS:
            raise ValueError("unreadable time %r" % text)
        mo, d, y = _MONTHS[parts[1]], int(parts[2]), int(parts[4])
        hms = parts[3].split(":")
        if len(hms) != 3:
            raise ValueError("unreadable time %r" % text)
        hh, mm = int(hms[0]), int(hms[1])
        sec = hms[2].split(".")
        ss = int(sec[0])
        rest = "." + sec[1] if len(sec) > 1 else ""
    if rest:
        if rest[0] != "." or not rest[1:].isdigit():
            raise ValueError("unreadable time %r" % text)
        frac = float("0" + rest)
    try:
        return time.mktime((y, mo, d, hh, mm, ss, 0, 0, -1)) + frac
    except (OverflowError, ValueError):
        raise ValueError("time %r is out of range" % text)


def task_count(spec):
    """Number of tasks in a Grid Engine task range (``2-10:1``, ``1-10:2``, ``8,9``, ``1-3,7``).

    Counted arithmetically, never expanded. Raises ValueError for a malformed range.
    """
    if spec.isdigit():
        return 1
    total = 0
    for part in spec.split(","):
        part = part.strip()
        step = 1
        if ":" in part:
            part, step_s = part.split(":", 1)
            step = int(step_s)
        if "-" in part:
            first_s, last_s = part.split("-", 1)
            first, last = int(first_s), int(last_s)
        else:
            first = last = int(part)
        if step < 1 or first < 0 or last < first:
            raise ValueError("bad task range %r" % spec)
        total += (last - first) // step + 1
    return total


def range_minimum(spec):
    """Smallest value of a PE range such as ``4``, ``4-4``, ``2-8`` or ``1-4,8``."""
    best = None
    for part in spec.split(","):
        part = part.split(":", 1)[0].strip()
        first = part.split("-", 1)[0].strip()
        value = int(first) if first else 1
        if best is None or value < best:
            best = value
    if best is None:
        raise ValueError("bad range %r" % spec)
    return best


def _normalise_range(spec):
    """``4-4`` -> ``4``; anything else unchanged."""
    if "-" in spec and "," not in spec and ":" not in spec:
        first, last = spec.split("-", 1)
        if first == last:
            return first
    return spec


_MEM_UNITS = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4, "P": 1024 ** 5,
              "k": 1000, "m": 1000 ** 2, "g": 1000 ** 3, "t": 1000 ** 4, "p": 1000 ** 5}


def parse_memory(text):
    """Bytes (int) for a Grid Engine memory value (``489.848M``, ``1.9G``, ``0.0``); None for
    ``-``, empty or unreadable values. Upper-case units are powers of 1024, lower-case of 1000.
    """
    if text is None:
        return None
    s = text.strip()
    if not s or s == "-":
        return None
    mult = _MEM_UNITS.get(s[-1])
    try:
        if mult is not None:
            return int(round(float(s[:-1]) * mult))
        return int(round(float(s)))
    except (ValueError, OverflowError):
        # OverflowError: "inf", "1e400G" (not a size any host has)
        return None


def _value_text(text):
    """The stripped text of a value element; None when there is none or Grid Engine prints "-"."""
    s = text.strip() if text is not None else ""
    return s if s and s != "-" else None


def _float_or_none(text):
    s = _value_text(text)
    if s is None:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _int_or_none(text):
    s = _value_text(text)
    if s is None:
        return None
    try:
        return int(s)
    except ValueError:
        try:
            return int(float(s))
        except (ValueError, OverflowError):
            return None


def _merge_states(current, letters):
    if not letters:
        return current
    for ch in letters:
        if ch not in current:
            current += ch
    return current


# ---------------------------------------------------------------------------------------------
# qstat -u '*' -f -r -xml
# ---------------------------------------------------------------------------------------------

# tags acted upon while streaming a qstat document
_QSTAT_TAGS = frozenset(("job_list", "name", "Queue-List", "cluster_queue_summary"))


def parse_qstat(data, strict_schema=True):
    """Parse ``qstat -u '*' -f -r -xml`` output (bytes).

    Returns ``{"flavour", "queues", "pending", "running"}`` shaped as in docs/snapshot.md.
    ``strict_schema=False`` accepts an unrecognised ``xmlns:xsd`` as flavour "unknown".

    Pending jobs: one entry per job and state. Grid Engine prints one row per task group
    (``-g d``: one row per task; held, error and waiting tasks of one array job in separate rows);
    rows of the same job and state are merged (``tasks`` joined with ``,``, ``task_count``
    summed); tasks of one job in different states stay separate entries so ``held``/``error``
    stay true to every task counted.
    """
    _tag, flavour = _check_root(data, QSTAT, ("job_info",), strict_schema)
    result = _run(data, QSTAT, lambda: _QstatReader().consume)
    result["flavour"] = flavour
    return result


def parse_qstat_stream(chunks, strict_schema=True):
    """:func:`parse_qstat` of the document the byte chunks ``chunks`` make, parsed as they come
    (``sge_cmd.run_sge_stream``): the same result and errors, without the whole output in memory."""
    flavour, result = _parse_stream(chunks, QSTAT, ("job_info",), strict_schema,
                                    lambda: _QstatReader().consume)
    result["flavour"] = flavour
    return result


def _bad_job_number(vals):
    if "JB_job_number" not in vals:
        raise SgeParseError("%s: job_list without JB_job_number" % QSTAT)
    text = vals["JB_job_number"]
    if text is None or not text.strip():
        raise SgeParseError("%s: job_list with empty JB_job_number" % QSTAT)
    raise SgeParseError("%s: job_list with unreadable JB_job_number %r" % (QSTAT, text))


class _Row(object):
    """The job entries of the snapshot are the ``__dict__`` of these objects: plain dicts, but
    with the keys stored once for all entries (CPython's key-sharing dictionaries), about 200
    bytes per entry instead of 460, and quicker to make (issue 21, "the poll at scale")."""

    __slots__ = ("__dict__",)


class _RunningRow(object):
    """:class:`_Row` of the running jobs (other keys, so another class)."""

    __slots__ = ("__dict__",)


class _HostRow(object):
    """:class:`_Row` of the snapshot's hosts."""

    __slots__ = ("__dict__",)


class _QueueRow(object):
    """:class:`_Row` of the snapshot's queue instances."""

    __slots__ = ("__dict__",)


class _QstatReader(object):
    """Streaming state for one qstat document."""

    def __init__(self):
        self.queues = []
        self.pending = []
        self.running = []
        self._running_index = {}       # id, or (id, task) for an array task -> entry
        self._running_rows = {}        # the same keys -> per-entry bookkeeping
        self._host_maps = {}           # (host, slots) -> the "hosts" mapping entries share
        self._own_hosts = set()        # keys of the entries whose "hosts" mapping is their own
        self._no_hosts = {}            # the "hosts" of the entries without a host
        self._cur_queue = None         # Queue-List name being read (-f)
        self._qsplit = {}              # queue instance name -> (cluster queue, host)
        self._strings = {}             # intern table for repeated short strings
        self._times = {}               # "YYYY-MM-DDTHH" -> epoch of the full hour
        self._stamps = {}              # time stamp text -> epoch (bursts share seconds)
        self._tasks = {}
        self._requests = {}
        self._hard_queues = {}
        self._no_requests = self._shared((), ())

    # -- helpers ----------------------------------------------------------------------------
    def _s(self, value):
        if value is None:
            return None
        return self._strings.setdefault(value, value)

    def _time(self, text, jid):
        # ISO stamps are converted per hour (one mktime call per distinct date and hour, then
        # minutes and seconds added): time zone offsets change only on whole or half hours.
        t = self._stamps.get(text)
        if t is not None:
            return t
        if text is None:
            return None
        if len(text) == 19 and text[13] == ":" and text[16] == ":":
            base = self._times.get(text[:13])
            if base is None:
                try:
                    base = parse_time(text[:13] + ":00:00")
                except ValueError:
                    raise SgeParseError("%s: job %s has an unreadable time %r"
                                        % (QSTAT, jid, text))
                self._times[text[:13]] = base
            try:
                t = base + int(text[14:16]) * 60 + int(text[17:19])
            except ValueError:
                raise SgeParseError("%s: job %s has an unreadable time %r" % (QSTAT, jid, text))
            if len(self._stamps) < 100000:
                self._stamps[text] = t
            return t
        try:
            return parse_time(text)
        except ValueError:
            raise SgeParseError("%s: job %s has an unreadable time %r" % (QSTAT, jid, text))

    def _count(self, spec, jid):
        n = self._tasks.get(spec)
        if n is None:
            try:
                n = task_count(spec)
            except ValueError:
                raise SgeParseError("%s: job %s has an unreadable task range %r"
                                    % (QSTAT, jid, spec))
            self._tasks[spec] = n
        return n

    # -- streaming ----------------------------------------------------------------------------
    def consume(self, batches):
        # The hot loop: one pass over end events; job rows are read when </job_list> arrives
        # (children complete), then cleared. Pending rows -- the bulk of a big listing -- are
        # handled inline with local names only.
        interesting = _QSTAT_TAGS
        queue_end = self._queue_end
        running_row = self._running_row
        pending_append = self.pending.append
        intern = self._strings.setdefault
        stamps = self._stamps
        no_requests = self._no_requests
        hard = self._hard
        time_of = self._time
        count_of = self._count
        new_row = object.__new__
        last_id = None
        last = {}                      # state -> entry of the job read last (rows are adjacent)
        for batch in batches:
            for _ev, elem in batch:
                tag = elem.tag
                if tag not in interesting:
                    continue
                if tag == "job_list":
                    vals = {c.tag: c.text for c in elem}
                    try:
                        jid = int(vals["JB_job_number"])
                    except (KeyError, TypeError, ValueError):
                        _bad_job_number(vals)
                    state = vals.get("state") or ""
                    kind = elem.get("state")
                    if kind is None:
                        kind = "pending" if ("q" in state or not state) else "running"
                    if kind == "running":
                        running_row(jid, vals, state, elem)
                    elif kind == "pending" or kind == "error":
                        tasks = vals.get("tasks")
                        count = count_of(tasks, jid) if tasks else 1
                        if jid == last_id:
                            prev = last.get(state)
                            if prev is not None:
                                # another row of the same job and state (-g d, task groups)
                                if tasks:
                                    prev["tasks"] = (prev["tasks"] + "," + tasks
                                                     if prev["tasks"] else tasks)
                                prev["task_count"] += count
                                elem.clear()
                                continue
                        else:
                            last_id = jid
                            last = {}
                        pe = pe_range = None
                        pe_tag = ("requested_pe" if "requested_pe" in vals
                                  else "requested_PE" if "requested_PE" in vals else None)
                        if pe_tag is not None:
                            child = elem.find(pe_tag)
                            pe = child.get("name")
                            pe = intern(pe, pe)
                            pe_range = child.text
                            try:
                                if not (pe_range or "").strip():
                                    raise ValueError("empty")
                                slots = range_minimum(pe_range)
                            except ValueError:
                                raise SgeParseError("%s: job %s has an unreadable PE range %r"
                                                    % (QSTAT, jid, pe_range))
                            pe_range = _normalise_range(pe_range)
                            pe_range = intern(pe_range, pe_range)
                        else:
                            try:
                                slots = int(vals["slots"])
                            except (KeyError, TypeError, ValueError):
                                slots = 1
                        if "hard_request" in vals or "hard_req_queue" in vals:
                            req, hq = hard(elem, vals)
                        else:
                            req, hq = no_requests
                        stamp = vals.get("JB_submission_time")
                        submit = stamps.get(stamp)
                        if submit is None:
                            submit = time_of(stamp, jid)
                        try:
                            prio = float(vals["JAT_prio"])
                        except (KeyError, TypeError, ValueError):
                            prio = None
                        owner = vals.get("JB_owner")
                        project = vals.get("JB_project")
                        row = new_row(_Row)
                        # (the keys in this order for every entry: they are shared)
                        row.id = jid
                        row.name = vals.get("JB_name") or ""
                        row.owner = intern(owner, owner)
                        row.project = intern(project, project)
                        row.state = intern(state, state)
                        row.priority = prio
                        row.submit_time = submit
                        row.tasks = tasks
                        row.task_count = count
                        row.slots = slots
                        row.pe = pe
                        row.pe_range = pe_range
                        row.hard_requests = req
                        row.hard_queues = hq
                        row.held = "h" in state
                        row.error = "E" in state
                        entry = row.__dict__
                        last[state] = entry
                        pending_append(entry)
                    # "finished" (zombie) rows are not part of the snapshot
                    elem.clear()
                elif tag == "name":
                    self._cur_queue = elem.text
                elif tag == "Queue-List":
                    queue_end(elem)
                    elem.clear()
                else:
                    raise SgeParseError(
                        "%s: found <cluster_queue_summary>: this is 'qstat -g c' output, "
                        "not a job and queue listing" % QSTAT)
        return self._finish()

    def _queue_end(self, elem):
        name = qtype = arch = None
        used = resv = total = None
        load = None
        load_res = None
        states = ""
        for child in elem:
            t = child.tag
            if t == "job_list":
                continue
            text = child.text
            if t == "name":
                name = text
            elif t == "qtype":
                qtype = text
            elif t == "slots_used":
                used = _int_or_none(text)
            elif t == "slots_resv":
                resv = _int_or_none(text)
            elif t == "slots_total":
                total = _int_or_none(text)
            elif t == "load_avg":
                load = _float_or_none(text)
            elif t == "arch":
                arch = text
            elif t == "state":
                states = text or ""
            elif t == "resource" and child.get("name") == "load_avg":
                load_res = _float_or_none(text)
        self._cur_queue = None
        if not name:
            raise SgeParseError("%s: Queue-List without name" % QSTAT)
        cqueue, _sep, host = name.partition("@")
        self.queues.append({
            "name": name,
            "queue": self._s(cqueue),
            "host": host or None,
            "qtype": self._s(qtype),
            "slots_total": total,
            "slots_used": used,
            "slots_reserved": resv,
            "load_avg": load if load is not None else load_res,
            "states": self._s(states),
            "arch": self._s(arch),
        })

    def _hard(self, elem, vals):
        """Shared hard_requests dict and hard_queues list of a job row: equal request sets share
        one object (read-only snapshot, far less memory)."""
        if len(vals) == len(elem):      # no repeated tag: at most one of each
            requests = ()
            if "hard_request" in vals:
                requests = ((elem.find("hard_request").get("name"), vals["hard_request"]),)
            queues = (vals["hard_req_queue"],) if "hard_req_queue" in vals else ()
        else:
            requests = tuple((c.get("name"), c.text) for c in elem.findall("hard_request"))
            queues = tuple(c.text for c in elem.findall("hard_req_queue"))
        return self._shared(requests, queues)

    def _shared(self, requests, queues):
        req = self._requests.get(requests)
        if req is None:
            req = self._requests[requests] = dict(requests)
        hq = self._hard_queues.get(queues)
        if hq is None:
            hq = self._hard_queues[queues] = list(queues)
        return req, hq

    def _running_row(self, jid, vals, state, elem):
        # Slots of a running job (the MASTER/SLAVE rule):
        # * every row counts the slots it reports in <slots>; a row without <slots> counts 1
        #   (GE 6.2 with -g t prints only <master>, one row per slot);
        # * -f prints one row per queue instance holding slots of the job (slots = slots in that
        #   queue instance); -g t prints one row per slot (MASTER for the first row in the
        #   master queue, SLAVE for the others); without -f only the master row is printed, with
        #   the job's total slots. In all cases the sum of the rows is the job's total, so rows
        #   of one (job, task) are summed per host;
        # * exception: with -g t and a PE whose job_is_first_task is FALSE Grid Engine prints one
        #   extra MASTER row that holds no slot. With -r, <granted_pe> carries the true total
        #   (sum of granted slots); when the rows add up to more, the excess is taken off the
        #   master host (which then may show 0 slots: its master task holds none, but the host
        #   is still busy and stays listed).
        # Without a MASTER row (plain -f) the first row seen stands for the master queue.
        granted = vals.get("granted_pe")
        if granted is None:
            granted = vals.get("granted_PE")
        granted = _int_or_none(granted) if granted is not None else None
        task = vals.get("tasks")
        key = jid if task is None else (jid, task)  # (no tuple for most: it would stay until the end)
        qname = vals.get("queue_name") or self._cur_queue
        split = self._qsplit.get(qname)
        if split is None:
            if qname:
                cqueue, _sep, host = qname.partition("@")
                split = (cqueue, host or None)
            else:
                split = (None, None)
            self._qsplit[qname] = split
        cqueue, host = split
        try:
            slots = int(vals["slots"])
        except (KeyError, TypeError, ValueError):
            slots = 1
        intern = self._strings.setdefault
        entry = self._running_index.get(key)
        if entry is None:
            owner = vals.get("JB_owner")
            project = vals.get("JB_project")
            row = object.__new__(_RunningRow)  # (see _Row; the keys in this order for every entry)
            row.id = jid
            row.task = task
            row.name = vals.get("JB_name") or ""
            row.owner = intern(owner, owner)
            row.project = intern(project, project)
            row.state = intern(state, state)
            row.queue = intern(cqueue, cqueue)
            row.host = host
            row.hosts = self._no_hosts  # (shared: the snapshot is read-only)
            row.slots = 0
            row.start_time = self._time(vals.get("JAT_start_time"), jid)
            entry = row.__dict__
            self._running_index[key] = entry
            self.running.append(entry)
            if granted is not None or "master" in vals:
                self._running_rows[key] = [False, granted]
        if granted is not None or "master" in vals:
            book = self._running_rows.get(key)
            if book is None:
                book = self._running_rows[key] = [False, granted]
            if vals.get("master") == "MASTER" and not book[0]:
                book[0] = True
                entry["queue"] = intern(cqueue, cqueue)
                entry["host"] = host
                entry["state"] = intern(state, state)
            if granted is not None:
                book[1] = granted
        if host is not None:
            hosts = entry["hosts"]
            if not hosts:
                # the first row: a mapping shared by every entry with this host and slots (most
                # jobs run on one host), copied when a second row adds to it
                shared = self._host_maps.get((host, slots))
                if shared is None:
                    shared = self._host_maps[(host, slots)] = {host: slots}
                entry["hosts"] = shared
            else:
                if key not in self._own_hosts:
                    self._own_hosts.add(key)
                    entry["hosts"] = hosts = dict(hosts)
                hosts[host] = hosts.get(host, 0) + slots
        entry["slots"] += slots

    def _finish(self):
        for key, (_has_master, granted) in self._running_rows.items():
            if granted is None:
                continue
            entry = self._running_index[key]
            excess = entry["slots"] - granted
            hosts = entry["hosts"]
            mhost = entry["host"]
            if excess > 0 and mhost is not None and hosts.get(mhost, 0) >= excess:
                if key not in self._own_hosts:
                    entry["hosts"] = hosts = dict(hosts)
                hosts[mhost] -= excess
                entry["slots"] = granted
        return {"queues": self.queues, "pending": self.pending, "running": self.running}


# ---------------------------------------------------------------------------------------------
# qhost -q -xml
# ---------------------------------------------------------------------------------------------

_HOST_FIELDS = {
    "arch_string": "arch",
    "num_proc": "num_proc",
    "m_socket": "sockets",
    "m_core": "cores",
    "m_thread": "threads",
    "load_avg": "load_avg",
    "mem_total": "mem_total",
    "mem_used": "mem_used",
    "swap_total": "swap_total",
    "swap_used": "swap_used",
}


def parse_qhost(data, strict_schema=True):
    """Parse ``qhost -q -xml`` (or ``qhost -xml``) output (bytes).

    Returns ``{"flavour", "hosts": {name: {arch, num_proc, load_avg, mem_total, mem_used,
    swap_total, swap_used, queues: {cluster queue: {qtype, slots_total, slots_used,
    slots_reserved, states}}}}}``. Sizes are bytes, "-" (no load report) is None.
    The ``global`` pseudo-host is skipped.
    """
    _tag, flavour = _check_root(data, QHOST, ("qhost",), strict_schema)
    hosts = _run(data, QHOST, lambda: _consume_qhost)
    return {"flavour": flavour, "hosts": hosts}


def _consume_qhost(batches):
    hosts = {}
    strings = {}
    for batch in batches:
        for _ev, elem in batch:
            if elem.tag != "host":
                continue
            name = elem.get("name")
            if not name:
                raise SgeParseError("%s: host without name" % QHOST)
            if name == "global":
                elem.clear()
                continue
            raw = {}
            queues = {}
            for child in elem:
                t = child.tag
                if t == "hostvalue":
                    raw[child.get("name")] = child.text
                elif t == "queue":
                    qname = child.get("name")
                    if not qname:
                        raise SgeParseError("%s: host %s has a queue without name" % (QHOST, name))
                    qv = {}
                    for v in child:
                        if v.tag == "queuevalue":
                            qv[v.get("name")] = v.text
                    queues[strings.setdefault(qname, qname)] = {
                        "qtype": strings.setdefault(qv.get("qtype_string"),
                                                    qv.get("qtype_string")),
                        "slots_total": _int_or_none(qv.get("slots")),
                        "slots_used": _int_or_none(qv.get("slots_used")),
                        "slots_reserved": _int_or_none(qv.get("slots_resv")),
                        "states": qv.get("state_string") or "",
                    }
            arch = raw.get("arch_string")
            hosts[name] = {
                "arch": None if arch in (None, "", "-") else strings.setdefault(arch, arch),
                "num_proc": _int_or_none(raw.get("num_proc")),
                "load_avg": _float_or_none(raw.get("load_avg")),
                "mem_total": parse_memory(raw.get("mem_total")),
                "mem_used": parse_memory(raw.get("mem_used")),
                "swap_total": parse_memory(raw.get("swap_total")),
                "swap_used": parse_memory(raw.get("swap_used")),
                "queues": queues,
            }
            elem.clear()
    return hosts


# ---------------------------------------------------------------------------------------------
# snapshot
# ---------------------------------------------------------------------------------------------

def _queue_selected(name, wanted):
    return wanted is None or name in wanted


def _pending_selected(job, wanted):
    """A pending job concerns the selected queues unless all its -q requests point elsewhere."""
    if wanted is None or not job["hard_queues"]:
        return True
    for request in job["hard_queues"]:
        cq = (request or "").partition("@")[0] or "*"
        for name in wanted:
            if fnmatchcase(name, cq):
                return True
    return False


def build_snapshot(qstat_bytes, qhost_bytes, taken_at, cell, queues=None, accounting=None,
                   strict_schema=True):
    """Combine ``qstat -u '*' -f -r -xml`` and ``qhost -q -xml`` into the snapshot.

    ``queues``: optional list of cluster queue names; queue instances, running jobs (by their
    master queue), hosts (those with an instance of a selected queue) and pending jobs (unless
    every ``-q`` request names another queue) are restricted to it.
    ``accounting``: the result of :func:`accounting_summary`, added as ``accounting`` when given.

    The snapshot shares equal ``hard_requests`` dicts and ``hard_queues`` lists between jobs,
    and equal ``hosts`` mappings between running jobs, to keep memory small: treat it as
    read-only. Its job, host and queue entries are plain dicts whose keys are stored once
    (:class:`_Row`).
    """
    with _gc_paused():
        return _snapshot(parse_qstat(qstat_bytes, strict_schema=strict_schema),
                         parse_qhost(qhost_bytes, strict_schema=strict_schema),
                         taken_at, cell, queues, accounting)


def snapshot_from(qstat, qhost, taken_at, cell, queues=None, accounting=None):
    """:func:`build_snapshot` of outputs already parsed: ``qstat`` from :func:`parse_qstat` or
    :func:`parse_qstat_stream`, ``qhost`` from :func:`parse_qhost`. Both are used up (the
    snapshot takes their lists and entries)."""
    with _gc_paused():
        return _snapshot(qstat, qhost, taken_at, cell, queues, accounting)


def _snapshot(qstat, qhost, taken_at, cell, queues, accounting):
    wanted = set(queues) if queues else None
    host_info = qhost["hosts"]

    queue_list = qstat["queues"]
    if not queue_list:
        # qstat without -f lists no queue instances: take them from qhost -q
        for hname, info in host_info.items():
            for cq, qv in info["queues"].items():
                queue_list.append({
                    "name": "%s@%s" % (cq, hname), "queue": cq, "host": hname,
                    "qtype": qv["qtype"], "slots_total": qv["slots_total"],
                    "slots_used": qv["slots_used"], "slots_reserved": qv["slots_reserved"],
                    "load_avg": info["load_avg"], "states": qv["states"], "arch": info["arch"],
                })
    if wanted is not None:
        queue_list = [q for q in queue_list if q["queue"] in wanted]
        running = [j for j in qstat["running"] if j["queue"] is None or j["queue"] in wanted]
        pending = [j for j in qstat["pending"] if _pending_selected(j, wanted)]
    else:
        running = qstat["running"]
        pending = qstat["pending"]

    hosts = {}

    def new_host(name, arch):
        info = host_info.get(name)
        if info is None:
            info = {"arch": arch, "num_proc": None, "load_avg": None,
                    "mem_total": None, "mem_used": None}
        row = object.__new__(_HostRow)  # (see _Row; the keys in this order for every host)
        row.arch = info["arch"] if info["arch"] is not None else arch
        row.num_proc = info["num_proc"]
        row.load_avg = info["load_avg"]
        row.mem_total = info["mem_total"]
        row.mem_used = info["mem_used"]
        row.slots_total = 0
        row.slots_used = 0
        row.slots_reserved = 0
        row.states = ""
        row.queues = []
        row.running_jobs = 0
        hosts[name] = h = row.__dict__
        return h

    if wanted is None:
        for name in host_info:
            new_host(name, None)
    for q in queue_list:
        hname = q["host"]
        if hname is None:
            continue
        h = hosts.get(hname)
        if h is None:
            h = new_host(hname, q.get("arch"))
        h["slots_total"] += q["slots_total"] or 0
        h["slots_used"] += q["slots_used"] or 0
        h["slots_reserved"] += q["slots_reserved"] or 0
        h["states"] = _merge_states(h["states"], q["states"])
        if q["queue"] not in h["queues"]:
            h["queues"].append(q["queue"])
    for job in running:
        for hname in job["hosts"]:
            h = hosts.get(hname)
            if h is not None:
                h["running_jobs"] += 1

    out_queues = []
    for q in queue_list:
        row = object.__new__(_QueueRow)  # (see _Row; the keys in this order for every queue)
        row.name = q["name"]
        row.queue = q["queue"]
        row.host = q["host"]
        row.qtype = q["qtype"]
        row.slots_total = q["slots_total"]
        row.slots_used = q["slots_used"]
        row.slots_reserved = q["slots_reserved"]
        row.load_avg = q["load_avg"]
        row.states = q["states"]
        out_queues.append(row.__dict__)
    flavour = qstat["flavour"]
    if flavour == UNKNOWN_FLAVOUR:
        flavour = qhost["flavour"]
    snapshot = {
        "schema": SNAPSHOT_SCHEMA,
        "taken_at": float(taken_at),
        "flavour": flavour,
        "cell": cell,
        "hosts": hosts,
        "queues": out_queues,
        "pending": pending,
        "running": running,
    }
    if accounting is not None:
        snapshot["accounting"] = accounting
    return snapshot


# ---------------------------------------------------------------------------------------------
# qacct -j
# ---------------------------------------------------------------------------------------------

_QACCT_INT = ("jobnumber", "slots", "exit_status")
_QACCT_TIME = ("qsub_time", "start_time", "end_time")
_QACCT_KEEP = ("qname", "hostname", "owner", "project", "jobname", "granted_pe")


def parse_qacct(text):
    """Parse ``qacct -j`` plain text (SGE 6 and UGE 8.6 formats) into a list of records.

    Each record: jobnumber, taskid (None for "undefined"), qsub_time, start_time, end_time
    (epoch seconds, local time of the parsing machine; None for "-/-"), failed (int), exit_status,
    hostname, slots, and qname, owner, project, jobname, granted_pe when present.
    Text without records ("no jobs running since startup", empty) gives [].
    """
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", "replace")
    records = []
    cur = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("====="):
            if cur:
                records.append(_qacct_record(cur))
                cur = {}
            continue
        parts = line.split(None, 1)
        key = parts[0]
        value = parts[1].strip() if len(parts) > 1 else ""
        if key == "qname" and "jobnumber" in cur:
            # a new record without a separator line
            records.append(_qacct_record(cur))
            cur = {}
        cur[key] = value
    if cur:
        records.append(_qacct_record(cur))
    return [r for r in records if r is not None]


def _qacct_record(fields):
    if "jobnumber" not in fields:
        return None
    rec = {}
    for key in _QACCT_INT:
        value = fields.get(key)
        try:
            # SoGE annotates signals: "exit_status  137                  (Killed)"
            rec[key] = int(value.split(None, 1)[0]) if value else None
        except ValueError:
            raise SgeParseError("%s: %s %r is not a number" % (QACCT, key, value))
    taskid = fields.get("taskid")
    try:
        # "undefined" for a job that is not an array job
        rec["taskid"] = int(taskid) if taskid and taskid.isdigit() else None
    except ValueError:
        raise SgeParseError("%s: job %s has an unreadable taskid %r" % (QACCT, rec["jobnumber"], taskid))
    for key in _QACCT_TIME:
        try:
            rec[key] = parse_time(fields.get(key))
        except ValueError:
            raise SgeParseError("%s: job %s has an unreadable %s %r"
                                % (QACCT, rec["jobnumber"], key, fields.get(key)))
    failed = fields.get("failed", "0").split(":", 1)[0].strip()
    try:
        rec["failed"] = int(failed)
    except ValueError:
        raise SgeParseError("%s: job %s has an unreadable failed %r"
                            % (QACCT, rec["jobnumber"], fields.get("failed")))
    for key in _QACCT_KEEP:
        if key in fields:
            value = fields[key]
            rec[key] = None if value in ("NONE", "undefined") else value
    return rec


def accounting_summary(records, now, window):
    """The snapshot's ``accounting`` part: jobs that ended in ``[now - window, now]`` (seconds).

    Records of one (job, task) -- a parallel job's PE tasks -- count once, from its earliest
    submit/start to its latest end. avg_duration = end - start, avg_wait = start - submit;
    None without jobs.
    """
    since = now - window
    groups = {}
    for rec in records:
        end = rec.get("end_time")
        if end is None or end < since or end > now:
            continue
        key = (rec.get("jobnumber"), rec.get("taskid"))
        g = groups.get(key)
        if g is None:
            groups[key] = [rec.get("qsub_time"), rec.get("start_time"), end]
        else:
            for i, value, pick in ((0, rec.get("qsub_time"), min), (1, rec.get("start_time"), min),
                                   (2, end, max)):
                if value is not None:
                    g[i] = value if g[i] is None else pick(g[i], value)
    durations = [g[2] - g[1] for g in groups.values() if g[1] is not None]
    waits = [g[1] - g[0] for g in groups.values() if g[1] is not None and g[0] is not None]
    return {
        "window": window,
        "jobs": len(groups),
        "avg_duration": sum(durations) / len(durations) if durations else None,
        "avg_wait": sum(waits) / len(waits) if waits else None,
    }


# ---------------------------------------------------------------------------------------------
# qstat -j ID -xml and qstat -g c -xml (diagnostics)
# ---------------------------------------------------------------------------------------------

def _collect_tree(batches):
    root = None
    for batch in batches:
        for _ev, elem in batch:
            root = elem
    return root


def _texts(elem, tag):
    return [e.text for e in elem.iter(tag)]


def parse_qstat_j(data, strict_schema=True):
    """Parse ``qstat -j ID[,ID] -xml`` (detailed_job_info) into ``{"flavour", "jobs": [...]}``.

    The list wrappers differ by flavour (``element``, ``ulong_sublist``, ``qstat_l_requests``
    or none at all); values are looked up by their field names. Each job: id, name, owner,
    project, submit_time, pe, pe_range, hard_requests, hard_queues, tasks (range spec),
    task_count, and ja_tasks [{task, start_time, queues {queue instance: slots}}].
    """
    tag, xsd = _prolog(data, QSTAT_J)
    if tag == "unknown_jobs":
        raise SgeParseError("%s: Grid Engine does not know the job(s) (<unknown_jobs>)"
                            % QSTAT_J)
    _tag, flavour = _check_root(data, QSTAT_J, ("detailed_job_info",), strict_schema)
    root = _run(data, QSTAT_J, lambda: _collect_tree)
    jobs = []
    containers = [e for e in root.iter() if e.find("JB_job_number") is not None]
    for job in containers:
        jid_text = job.findtext("JB_job_number")
        try:
            jid = int(jid_text)
        except (TypeError, ValueError):
            raise SgeParseError("%s: unreadable JB_job_number %r" % (QSTAT_J, jid_text))
        try:
            submit = parse_time(job.findtext("JB_submission_time"))
        except ValueError:
            raise SgeParseError("%s: job %s has an unreadable submission time" % (QSTAT_J, jid))
        requests = {}
        res = job.find("JB_hard_resource_list")
        if res is not None:
            name = None
            for e in res.iter():
                if e.tag == "CE_name":
                    name = e.text
                elif e.tag == "CE_stringval" and name is not None:
                    requests[name] = e.text
                    name = None
        hq = job.find("JB_hard_queue_list")
        hard_queues = _texts(hq, "QR_name") if hq is not None else []
        pe = job.findtext("JB_pe")
        pe_range = None
        rng = job.find("JB_pe_range")
        if rng is not None:
            mins, maxs = _texts(rng, "RN_min"), _texts(rng, "RN_max")
            if mins and maxs:
                pe_range = _normalise_range("%s-%s" % (mins[0], maxs[0]))
        tasks = None
        count = 1
        st = job.find("JB_ja_structure")
        if st is not None:
            mins, maxs, steps = _texts(st, "RN_min"), _texts(st, "RN_max"), _texts(st, "RN_step")
            parts = []
            for i in range(min(len(mins), len(maxs))):
                step = steps[i] if i < len(steps) else "1"
                parts.append("%s-%s:%s" % (mins[i], maxs[i], step))
            if parts:
                tasks = ",".join(parts)
                try:
                    count = task_count(tasks)
                except ValueError:
                    raise SgeParseError("%s: job %s has an unreadable task range %r" % (QSTAT_J, jid, tasks))
        ja_tasks = []
        jt = job.find("JB_ja_tasks")
        if jt is not None:
            current = None
            for e in jt.iter():
                if e.tag == "JAT_task_number":
                    try:
                        number = int(e.text)
                    except (TypeError, ValueError):
                        raise SgeParseError("%s: job %s has an unreadable JAT_task_number %r"
                                            % (QSTAT_J, jid, e.text))
                    current = {"task": number, "start_time": None, "queues": {}}
                    ja_tasks.append(current)
                elif current is None:
                    continue
                elif e.tag == "JAT_start_time":
                    try:
                        current["start_time"] = parse_time(e.text)
                    except ValueError:
                        raise SgeParseError("%s: job %s task %s has an unreadable JAT_start_time %r"
                                            % (QSTAT_J, jid, current["task"], e.text))
                elif e.tag == "JG_qname":
                    qn = e.text
                    current["queues"][qn] = 0
                elif e.tag == "JG_slots" and current["queues"]:
                    current["queues"][qn] = _int_or_none(e.text) or 0
        jobs.append({
            "id": jid,
            "name": job.findtext("JB_job_name") or "",
            "owner": job.findtext("JB_owner"),
            "project": job.findtext("JB_project"),
            "submit_time": submit,
            "pe": pe,
            "pe_range": pe_range,
            "hard_requests": requests,
            "hard_queues": hard_queues,
            "tasks": tasks,
            "task_count": count,
            "ja_tasks": ja_tasks,
        })
    if not jobs:
        raise SgeParseError("%s: no job in the document" % QSTAT_J)
    return {"flavour": flavour, "jobs": jobs}


def parse_qstat_gc(data, strict_schema=True):
    """Parse ``qstat -g c -xml`` into ``{"flavour", "cluster_queues": [...]}``; each entry:
    name, load (None when not reported), used, resv, available, total, temp_disabled,
    manual_intervention."""
    _tag, flavour = _check_root(data, QSTAT_GC, ("job_info",), strict_schema)

    def consume(batches):
        out = []
        for batch in batches:
            for _ev, elem in batch:
                if elem.tag != "cluster_queue_summary":
                    continue
                vals = dict((c.tag, c.text) for c in elem)
                if "name" not in vals:
                    raise SgeParseError("%s: cluster_queue_summary without name" % QSTAT_GC)
                if not (vals["name"] or "").strip():
                    raise SgeParseError("%s: cluster_queue_summary with empty name" % QSTAT_GC)
                entry = {"name": vals["name"], "load": _float_or_none(vals.get("load"))}
                for key in ("used", "resv", "available", "total", "temp_disabled",
                            "manual_intervention"):
                    entry[key] = _int_or_none(vals.get(key))
                out.append(entry)
                elem.clear()
        return out

    return {"flavour": flavour, "cluster_queues": _run(data, QSTAT_GC, lambda: consume)}
