# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzzing of every parser of external text in the collection (docs/reliability/fuzzing.md).

Used by ``benchmarks/fuzz_parsers.py`` (100,000 inputs, each parser in a child process) and by
``tests/unit/plugins/test_fuzz_parsers.py`` (a few thousand inputs, in the test process).

Every parser is a :class:`Target`: the function called, the exception(s) its documentation
names for bad input (its *parse error*), a mutator and a hypothesis strategy. Inputs come from

* mutation of real seeds (:class:`Corpus`: Grid Engine output, SWF traces, state files): byte
  flips, inserted tokens, deletions, truncation, duplicated or deleted elements and lines,
  splicing two seeds, interesting values (huge, negative, non-ASCII digits, bad dates...),
  values of several megabytes, documents repeated thousands of times, 100,000 nested elements,
  encoding games, and DTDs with internal entities, billion-laughs expansion and external
  entities pointing at /etc/passwd and at a secret file of the run;
* hypothesis strategies that build the formats from their grammar, driven by ``@given`` with a
  fixed seed (no example database, no shrinking: the test function never fails, it records).

An input ends in one of three ways: *accepted*, the documented *parse error*, or a *crash*
(any other exception, a run over the time limit, or an attempt to open /etc/passwd or the
secret file, to connect anywhere or to start a process, seen by an audit hook).
"""

from __future__ import annotations

import collections
import io
import json
import os
import random
import re
import shutil
import signal
import sys
import tarfile
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis import seed as hypothesis_seed

from ansible_collections.gridengine.balancer.plugins.module_utils import (
    balancer_journal,
    balancer_lock,
    balancer_state,
    local_node,
    sge_admin,
    sge_cmd,
    sge_rqs,
    sge_submit,
    sge_xml,
    task_data,
    task_registry,
    transfer,
    transfer_remote,
)
from ansible_collections.gridengine.balancer.plugins.plugin_utils import sge_inventory, stats
from ansible_collections.gridengine.balancer.plugins.plugin_utils.sim import swf
from ansible_collections.gridengine.balancer.tests.unit import awx_defs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")
SHARED_SGE = os.path.join(os.path.dirname(ROOT), "shared", "data", "sge")
SHARED_TRACES = os.path.join(os.path.dirname(ROOT), "shared", "data", "traces")

SECRET_MARK = "FUZZ-SECRET-5b1e0c"
FORBIDDEN_PATHS = ("/etc/passwd", "/etc/shadow", "/etc/hostname")
_FORBIDDEN_EVENTS = ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "subprocess.Popen",
                     "os.system", "os.exec", "os.posix_spawn", "os.spawn", "urllib.Request", "ftplib.connect")

# ---------------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------------

# Hand-written seeds for formats no real capture exists of here (marked so in the report).
# settings.sh: the first three lines are the local cluster's $SGE_ROOT/default/common/settings.sh
# (Debian's Son of Grid Engine 8.1.9 package), the others the lines inst_sge writes.
SETTINGS_SEEDS = (
    b"SGE_ROOT=/var/lib/gridengine; export SGE_ROOT\nSGE_CELL=default; export SGE_CELL\n"
    b"SGE_ARCH=lx-amd64; export SGE_ARCH\n",
    b"SGE_ROOT=/opt/sge; export SGE_ROOT\n\nARCH=`$SGE_ROOT/util/arch`\nDEFAULTMANPATH=`$SGE_ROOT/util/arch -m`\n"
    b"SGE_CELL=default; export SGE_CELL\nSGE_CLUSTER_NAME=p6444; export SGE_CLUSTER_NAME\n"
    b"SGE_QMASTER_PORT=6444; export SGE_QMASTER_PORT\nSGE_EXECD_PORT=6445; export SGE_EXECD_PORT\n",
)
# qsub -terse and qstat -j (plain text) as the partner cluster prints them (SoGE 8.1.9 layout)
TERSE_SEEDS = (b"123\n", b"4711.1-10:1\n", b"Your job 5 (\"x\") has been submitted\n")
QSTAT_J_TEXT_SEEDS = (
    b"==============================================================\n"
    b"job_number:                 42\nexec_file:                  job_scripts/42\n"
    b"submission_time:            Mon Nov 24 21:10:11 2025\nowner:                      alice\n"
    b"job_name:                   tq42_0_ab12cd34_sleep\nscheduling info:            (Collecting of scheduler "
    b"job information is turned off)\n",
    b"job_number:                 43\nerror reason    1:          11/24/2025 21:10:11 [0:1]: can't chdir\n",
)
# The first lines of KTH-SP2-1996-2.1-cln.swf (Parallel Workloads Archive; see
# ../shared/data/README.md), for runs without ../shared (the unit test).
SWF_SEED = (
    "; Version: 2.2\n; Computer: IBM SP2\n; Installation: Swedish Royal Institute of Technology (KTH)\n"
    "; MaxJobs: 28490\n; MaxRecords: 28476\n; UnixStartTime: 843480031\n; MaxNodes: 100\n; MaxProcs: 100\n;\n"
    "   15   599850 192180   3477    4     -1    -1    4  53940    -1  1  12  12  -1 -1 -1 -1 -1\n"
    "   16   600022  11940   2488   25     -1    -1   25   3600    -1  1  13  13  -1 -1 -1 -1 -1\n"
    "   17   600476 364560 215337    5     -1    -1    5 215400    -1  0  14  14  -1 -1 -1 -1 -1\n"
    "   18   600836  32100  35373   17     -1    -1   17  36000    -1  1  15  15  -1 -1 -1 -1 -1\n"
    "   19   603930   8100     29    8     -1    -1    8   2400    -1  1  16  16  -1 -1 -1 -1 -1\n"
    "   20   605396      0     16    1     -1    -1    1     60    -1  1  17  17  -1 -1 -1 -1 -1\n"
)
RRULE_SEEDS = (
    b"DTSTART:20240101T000000Z RRULE:FREQ=MINUTELY;INTERVAL=5",
    b"DTSTART;TZID=Europe/Stockholm:20240101T030000 RRULE:FREQ=DAILY;INTERVAL=1;BYDAY=MO,TU,WE,TH,FR",
    b"DTSTART:20240101T000000Z RRULE:FREQ=HOURLY;INTERVAL=1;COUNT=10",
)


def _json_seeds():
    """Files the collection writes itself (balancer state, journal, lock, task registry,
    transfer records and configuration, local node records), made by its own writers."""
    state = {"nodes": {"node001": {"joined": 1700000000.0, "idle_since": None}},
             "last_change": 1700000100.5, "waits": [[1700000000, 12.5], [1700000060, 3]]}
    journal = balancer_journal.render([
        {"node": "node002", "operation": "join", "started": 1700000000.0, "detail": {"address": "10.77.0.12"}},
        {"node": "node003", "operation": "leave", "started": 1700000001, "detail": {}}])
    lock = balancer_state.dumps({"schema": 1, "cluster": "mycluster", "owner": "awx pid 12 loadbalance.yml",
                                 "token": "0123456789abcdef0123456789abcdef", "acquired": 1700000000.0,
                                 "renewed": 1700000000.0, "expires": 1700000600.0, "ttl": 600})
    registry = balancer_state.dumps({
        "version": 1,
        "jobs": {"logs": {"replicas": 1, "max_per_host": None, "no_autobalance": False,
                          "tasks": {"0": {"live": "node001"}, "1": {"live": "node002"}}}},
        "moves": {"logs/0": {"job": "logs", "task": "0", "source": "node001", "target": "node003",
                             "role": "live", "started": 1700000000.0}}})
    transfer_cfg = json.dumps({"local": {"root": "/var/lib/gridengine", "cell": "default"},
                               "remote": {"root": "/var/lib/gridengine", "cell": "partner", "qmaster_port": 7444},
                               "jobs_dir": "/var/spool/transfer/jobs", "bin_dir": "/usr/bin", "host": "vm",
                               "pending_complex": "remote_pending", "poll_interval": 5})
    record = json.dumps({"token": "tq42_0_ab12cd34", "local_job": "42", "local_task": "undefined",
                         "local_submit": "Mon Nov 24 21:10:11 2025", "remote_cell": "partner", "remote_id": "7"})
    node = json.dumps({"name": "node001", "address": "10.77.0.11", "pid": 4242, "cluster": "local"}, indent=2)
    texts = (balancer_state.dumps(state), journal, lock, registry, transfer_cfg, record, node)
    return [text.encode("utf-8") for text in texts]


def _stats_seed():
    row = {"time": 1700000000.0, "hosts": 3, "running_jobs": 5, "queued_jobs": 2, "slots": 12,
           "avg_duration": 61.5, "avg_wait": 3.25, "avg_load": 0.75, "node_hours": 0.05, "cost": 0.005,
           "total_node_hours": 1.25, "total_cost": 0.125}
    later = dict(row, time=1700000300.0, hosts=4)
    return [(stats._csv_line(stats.ALL_COLUMNS) + stats.format_row(row, stats.ALL_COLUMNS)  # pylint: disable=protected-access
             + stats.format_row(later, stats.ALL_COLUMNS)).encode("utf-8"),
            (stats.format_row(row) + stats.format_row(later)).replace(",", ",", 1).encode("utf-8")]


class Corpus(object):
    """Seeds by format: ``xml`` (qstat/qhost/-j/-g c documents and fragments), ``qacct``,
    ``qconf`` (object text), ``rqs``, ``hostgroups``, ``names`` (one name per line), ``text``
    (other plain text), ``swf`` (lines of real traces), ``json``, ``settings``, ``csv``,
    ``terse``, ``qstat_j_text``, ``rrule``, and ``values`` (element texts and qconf values
    of the seeds, for the value parsers)."""

    def __init__(self, sge_dirs, swf_files=(), swf_text=SWF_SEED):
        self.sources = []
        self.formats = collections.defaultdict(list)
        seen = set()
        for top in sge_dirs:
            if not os.path.isdir(top):
                continue
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames.sort()
                for name in sorted(filenames):
                    if name.endswith(".md"):
                        continue
                    path = os.path.join(dirpath, name)
                    with open(path, "rb") as handle:
                        data = handle.read()
                    self.sources.append(path)
                    if data not in seen:        # the fixtures hold copies of ../shared/data/sge
                        seen.add(data)
                        self.formats[self._classify(name, data)].append(data)
        self.swf_lines = []
        for path in swf_files:
            with open(path, "r", encoding="utf-8", errors="replace") as handle:
                self.swf_lines.append(handle.read().splitlines(True))
            self.sources.append(path)
        if not self.swf_lines:
            self.swf_lines.append(swf_text.splitlines(True))
        self.formats["json"].extend(_json_seeds())
        self.formats["settings"].extend(SETTINGS_SEEDS)
        self.formats["terse"].extend(TERSE_SEEDS)
        self.formats["qstat_j_text"].extend(QSTAT_J_TEXT_SEEDS)
        self.formats["rrule"].extend(RRULE_SEEDS)
        self.formats["csv"].extend(_stats_seed())
        self.values = sorted(self._values())
        self.qhost = [d for d in self.formats["xml"] if b"<qhost" in d]
        self.qstat = [d for d in self.formats["xml"] if b"<job_info" in d and b"cluster_queue_summary" not in d]
        self.tar = _tar_seed()

    @staticmethod
    def _classify(name, data):
        head = data.lstrip()[:200]
        if name.endswith(".xml") or head.startswith(b"<"):
            return "xml"
        if b"jobnumber" in data:
            return "qacct"
        if b"group_name" in data:
            return "hostgroups"
        if b"limit " in data and b"{" in data:
            return "rqs"
        if name.endswith(".err") or name.endswith(".stdout") or name.endswith(".out"):
            return "text"
        if all(len(line.split()) <= 1 for line in data.splitlines()):
            return "names"
        return "qconf"

    def _values(self):
        values = set()
        for data in self.formats["xml"]:
            for match in re.finditer(rb">([^<>]{1,80})</", data):
                values.add(match.group(1).strip())
            for match in re.finditer(rb"=\"([^\"<>]{1,80})\"", data):
                values.add(match.group(1))
        for fmt in ("qacct", "qconf", "rqs", "hostgroups"):
            for data in self.formats[fmt]:
                for line in data.splitlines():
                    parts = line.split(None, 1)
                    if len(parts) == 2:
                        values.add(parts[1].strip())
        values.discard(b"")
        return values

    def pick(self, rng, fmt):
        return rng.choice(self.formats[fmt])

    def swf_chunk(self, rng):
        lines = rng.choice(self.swf_lines)
        header = [line for line in lines[:40] if line.startswith(";")]
        body = [line for line in lines[:2000] if not line.startswith(";")] if len(lines) < 3000 else None
        if body is None:
            start = rng.randrange(40, max(41, len(lines) - 300))
            body = lines[start:start + rng.randint(1, 200)]
        else:
            start = rng.randrange(0, max(1, len(body)))
            body = body[start:start + rng.randint(1, 200)]
        return "".join(header + body).encode("utf-8")


def _hostgroup_structure(rng):
    """``qconf -shgrp`` text of a big structure: a chain of nested groups (each holds the next),
    a group of many hosts, or groups that form a cycle."""
    kind = rng.randrange(3)
    if kind == 0:
        n = rng.choice((100, 1000, 3000))
        return "".join("group_name @g%d\nhostlist @g%d node%d\n" % (i, i + 1, i) for i in range(n)).encode()
    if kind == 1:
        n = rng.choice((1000, 20000, 100000))
        hosts = " \\\n         ".join("node%06d.example.org" % i for i in range(n))
        return ("group_name @big\nhostlist " + hosts + "\ngroup_name @all\nhostlist @big @big\n").encode()
    n = rng.choice((2, 50, 1000))
    return "".join("group_name @c%d\nhostlist @c%d h%d\n" % (i, (i + 1) % n, i) for i in range(n)).encode()


def _tar_seed():
    """A packed task copy as task_data.pack writes it (PAX format, ``.`` as the top)."""
    top = tempfile.mkdtemp(prefix="fuzz-tarseed-")
    try:
        os.makedirs(os.path.join(top, "sub"))
        with open(os.path.join(top, "data.txt"), "wb") as handle:
            handle.write(b"task data\n" * 20)
        with open(os.path.join(top, "sub", "part-0001"), "wb") as handle:
            handle.write(bytes(range(256)))
        os.symlink("data.txt", os.path.join(top, "link"))
        checksum = task_data.content_checksum(top)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.add(top, arcname=".", recursive=True)
        return buf.getvalue(), checksum
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# mutation
# ---------------------------------------------------------------------------------------------

INTERESTING = (
    b"", b" ", b"-", b"-1", b"0", b"1", b"-0", b"00", b"+5", b" 5 ", b"0x10", b"1_000", b"4294967296",
    b"18446744073709551616", b"9" * 40, b"1e309", b"-1e309", b"1e-400", b"nan", b"NaN", b"inf", b"-inf",
    b"Infinity", b"1.5", b".", b"1-", b"-5", b"1-10:0", b"10-1", b"1-3,", b",", b":", b"1:2:3", b"a-b:c",
    b"1-10:2,8,9", b"2-", b"1-99999999999999999999:1", b"0-0", b"9999-12-31T23:59:59", b"0000-00-00T00:00:00",
    b"2019-02-30T25:61:61", b"2019-05-15T13:16:51.", b"2019-05-15T13:16:51.x", b"+201-05-15T13:16:51",
    b"2019-05-15T13:16:5\xd9\xa1", b"Wed Oct 24 20:22:31 2018", b"Wed Foo 24 20:22:31 2018",
    b"Wed Oct 24 20:22 2018", b"Wed Oct 24 20:22:31.5.5 2018", b"Wed Oct 99 99:99:99 99999999",
    b"06/11/2020 13:22:28.652", b"99/99/9999 99:99:99", b"1592928409331", b"99999999999999999999999",
    b"-/-", b"NONE", b"undefined", b"TRUE", b"INFINITY", b"\xd9\xa1\xd9\xa2", b"\xef\xbc\x91\xef\xbc\x92",
    b"\xc2\xb2", b"\xc2\xb2-\xc2\xb3", b"\xe2\x80\xae", b"\x00", b"\xff\xfe", b"\xed\xa0\x80", b"&amp;",
    b"&#0;", b"&#x1F;", b"&#xD800;", b"&#1114112;", b"&#65;", b"&lt;job_list&gt;", b"<![CDATA[x]]>", b"]]>",
    b"@", b"@a@b", b"all.q@", b"@host", b"[", b"]", b"[a=[b=1]]", b"\\", b"{", b"}", b"=", b"a=b=c",
    b"1.9G", b"1.9X", b"1e3M", b"K", b"-1K", b"1e400G", b"nanM", b"5\n6", b"\t", b"\r\n", b"a" * 300,
    b"qw", b"r", b"hqw", b"Eqw", b"dr", b"t", b"s", b"MASTER", b"SLAVE", b"running", b"pending",
)
TOKENS = (b"<", b">", b"/>", b"</", b"&", b"&a;", b"\"", b"'", b"=", b"<!--", b"-->", b"<?", b"?>", b"]]>",
          b"<![CDATA[", b"\x00", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\n", b"\r", b"\\\n", b";", b",", b"[", b"]",
          b"{", b"}", b":", b"@", b"#", b" ", b"\t", b"=====", b"-", b"1")

_START_TAG = re.compile(rb"<([A-Za-z_][\w.-]*)(?:\s[^<>]*)?>")
_TEXT_NODE = re.compile(rb">([^<>]*)</")
_SECRET_NAME = "fuzz-secret.txt"


class Mutator(object):
    """Mutations of bytes, seeded by a ``random.Random``; ``secret`` is the path of a file the
    external entities point at (it must never be read)."""

    def __init__(self, corpus, secret):
        self.corpus = corpus
        self.secret = secret
        self.xml_ops = (
            (self.flip, 8), (self.insert, 8), (self.delete, 6), (self.truncate, 6), (self.dup_element, 8),
            (self.del_element, 6), (self.splice, 4), (self.value, 12), (self.attribute, 4), (self.entities, 5),
            (self.encoding, 3), (self.repeat_element, 0.6), (self.huge_value, 0.6), (self.deep_nest, 0.6),
        )
        self.text_ops = (
            (self.flip, 6), (self.insert, 8), (self.delete, 5), (self.truncate, 5), (self.dup_lines, 6),
            (self.del_lines, 5), (self.swap_lines, 3), (self.splice, 3), (self.line_value, 14),
            (self.continuation, 3), (self.brackets, 2), (self.repeat_lines, 0.6), (self.huge_line, 0.6),
        )
        self.json_ops = (
            (self.flip, 6), (self.insert, 6), (self.delete, 5), (self.truncate, 5), (self.splice, 2),
            (self.json_value, 16), (self.json_deep, 0.8), (self.huge_line, 0.5),
        )

    def mutate(self, rng, data, fmt, pool):
        """1 to 4 stacked mutations of ``data``; ``pool`` (seeds of the same format) for splicing."""
        ops = self.xml_ops if fmt == "xml" else self.json_ops if fmt == "json" else self.text_ops
        funcs = [op for op, _w in ops]
        weights = [w for _op, w in ops]
        for dummy in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
            op = rng.choices(funcs, weights)[0]
            data = op(rng, data, pool)
            if len(data) > (1 << 23):
                break
        return data

    # -- byte level --------------------------------------------------------------------------
    @staticmethod
    def flip(rng, data, _pool):
        if not data:
            return bytes([rng.randrange(256)])
        buf = bytearray(data)
        for dummy in range(rng.randint(1, 8)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        return bytes(buf)

    @staticmethod
    def insert(rng, data, _pool):
        i = rng.randint(0, len(data))
        token = rng.choice(TOKENS) if rng.random() < 0.6 else rng.choice(INTERESTING)
        return data[:i] + token * rng.choice((1, 1, 1, 2, 5, 100)) + data[i:]

    @staticmethod
    def delete(rng, data, _pool):
        if not data:
            return data
        i = rng.randrange(len(data))
        return data[:i] + data[i + rng.randint(1, max(1, min(len(data) - i, rng.choice((1, 4, 64, 1024))))):]

    @staticmethod
    def truncate(rng, data, _pool):
        return data[:rng.randint(0, len(data))] if data else data

    @staticmethod
    def splice(rng, data, pool):
        other = rng.choice(pool) if pool else data
        return data[:rng.randint(0, len(data))] + other[rng.randint(0, len(other)):]

    # -- XML aware ---------------------------------------------------------------------------
    @staticmethod
    def _element(rng, data):
        """(start, end) of a random element that has a matching end tag, else None."""
        tags = list(_START_TAG.finditer(data, 0, min(len(data), 1 << 20)))
        for dummy in range(6):
            if not tags:
                return None
            match = rng.choice(tags)
            close = data.find(b"</" + match.group(1) + b">", match.end())
            if close >= 0:
                return match.start(), close + len(match.group(1)) + 3
        return None

    def dup_element(self, rng, data, _pool):
        span = self._element(rng, data)
        if span is None:
            return self.insert(rng, data, _pool)
        start, end = span
        return data[:end] + data[start:end] * rng.choice((1, 1, 2, 3)) + data[end:]

    def del_element(self, rng, data, _pool):
        span = self._element(rng, data)
        if span is None:
            return self.delete(rng, data, _pool)
        return data[:span[0]] + data[span[1]:]

    def repeat_element(self, rng, data, _pool):
        """A huge document: one element repeated up to 20,000 times (at most about 8 MB)."""
        span = self._element(rng, data)
        if span is None:
            return data * rng.choice((10, 100))
        start, end = span
        times = min(rng.choice((100, 1000, 20000)), max(1, (8 << 20) // max(1, end - start)))
        return data[:end] + data[start:end] * times + data[end:]

    @staticmethod
    def value(rng, data, _pool):
        nodes = list(_TEXT_NODE.finditer(data, 0, min(len(data), 1 << 20)))
        new = rng.choice(INTERESTING)
        if not nodes:
            return data + new
        match = rng.choice(nodes)
        return data[:match.start(1)] + new + data[match.end(1):]

    @staticmethod
    def attribute(rng, data, _pool):
        tags = list(_START_TAG.finditer(data, 0, min(len(data), 1 << 20)))
        if not tags:
            return data
        match = rng.choice(tags)
        name = match.group(1)
        choice = rng.randrange(5)
        if choice == 0:     # attributes removed
            tag = b"<" + name + b">"
        elif choice == 1:   # a duplicate attribute (not well-formed)
            tag = b"<" + name + b" name=\"a\" name=\"b\">"
        elif choice == 2:   # a job row's state attribute
            tag = b"<" + name + b" state=\"" + rng.choice((b"running", b"pending", b"error", b"zombie", b"",
                                                           b"\xff")) + b"\">"
        elif choice == 3:
            tag = b"<" + name + b" name=\"" + rng.choice(INTERESTING).replace(b"\"", b"") + b"\">"
        else:               # self-closing: the element loses its children
            tag = b"<" + name + b"/>"
        return data[:match.start()] + tag + data[match.end():]

    def huge_value(self, rng, data, _pool):
        size = rng.choice((10 ** 4, 10 ** 5, 10 ** 6, 4 * 10 ** 6))
        filler = rng.choice((b"9", b"a", b"x y ", b"\xc3\xa9", b"1-", b"&amp;", b" "))
        nodes = list(_TEXT_NODE.finditer(data, 0, min(len(data), 1 << 20)))
        big = (filler * (size // len(filler) + 1))[:size]
        if not nodes:
            return data + big
        match = rng.choice(nodes)
        return data[:match.start(1)] + big + data[match.end(1):]

    def deep_nest(self, rng, data, _pool):
        """Up to 100,000 nested elements inside the document (sometimes left unclosed)."""
        depth = rng.choice((100, 1000, 10000, 100000))
        tag = rng.choice((b"a", b"job_list", b"Queue-List", b"queue_info", b"element", b"host"))
        opened = b"<" + tag + b">"
        closed = b"</" + tag + b">"
        inner = rng.choice((b"", b"<JB_job_number>1</JB_job_number>", b"x"))
        blob = opened * depth + inner + closed * (depth if rng.random() < 0.8 else rng.randrange(depth))
        span = self._element(rng, data)
        at = span[0] if span is not None and span[0] > 0 else data.find(b">", data.find(b"<", 2)) + 1
        return data[:at] + blob + data[at:]

    def entities(self, rng, data, _pool):
        """A DTD before the root element (or somewhere else) and entity references in a value."""
        secret = "file://" + self.secret
        kind = rng.randrange(8)
        if kind == 0:
            dtd = b"<!DOCTYPE job_info [<!ENTITY e \"" + SECRET_MARK.encode() + b"\">]>"
            ref = b"&e;"
        elif kind == 1:     # billion laughs
            ents = [b"<!ENTITY l0 \"lol\">"]
            for i in range(1, 10):
                ents.append(b"<!ENTITY l%d \"%s\">" % (i, (b"&l%d;" % (i - 1)) * 10))
            dtd = b"<!DOCTYPE job_info [" + b"".join(ents) + b"]>"
            ref = b"&l9;"
        elif kind == 2:     # external entity: /etc/passwd
            dtd = b"<!DOCTYPE job_info [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>"
            ref = b"&xxe;"
        elif kind == 3:     # external entity: the secret file of this run
            dtd = b"<!DOCTYPE job_info [<!ENTITY xxe SYSTEM \"" + secret.encode() + b"\">]>"
            ref = b"&xxe;"
        elif kind == 4:     # external parameter entity / external DTD
            dtd = (b"<!DOCTYPE job_info SYSTEM \"" + secret.encode() + b"\" [<!ENTITY % p SYSTEM "
                   b"\"file:///etc/passwd\"> %p;]>")
            ref = b"&p;"
        elif kind == 5:     # quadratic blow-up: one big entity referenced many times
            dtd = b"<!DOCTYPE job_info [<!ENTITY big \"" + b"x" * 50000 + b"\">]>"
            ref = b"&big;" * 200
        elif kind == 6:     # a DTD fetched over the network
            dtd = b"<!DOCTYPE job_info PUBLIC \"-//x//y\" \"http://127.0.0.1:9/evil.dtd\">"
            ref = b"&ext;"
        else:               # references without a DTD, character references of non-characters
            dtd = b""
            ref = rng.choice((b"&xxe;", b"&#0;", b"&#xD800;", b"&#x110000;", b"&amp", b"&;", b"&#x41;"))
        where = rng.randrange(5)
        root = re.search(rb"<[A-Za-z_]", data)
        if where <= 2 and root is not None:   # in the prolog, where a DTD belongs
            data = data[:root.start()] + dtd + data[root.start():]
        elif where == 3:
            data = dtd + data                 # before the XML declaration
        else:
            i = rng.randint(0, len(data))
            data = data[:i] + dtd + data[i:]
        nodes = list(_TEXT_NODE.finditer(data, 0, min(len(data), 1 << 20)))
        if nodes:
            match = rng.choice(nodes)
            data = data[:match.start(1)] + ref + data[match.end(1):]
        return data

    @staticmethod
    def encoding(rng, data, _pool):
        kind = rng.randrange(7)
        body = re.sub(rb"\A\s*<\?xml[^>]*\?>", b"", data)
        if kind == 0:
            return b"<?xml version=\"1.0\" encoding=\"" + rng.choice(
                (b"UTF-16", b"utf-32", b"bogus", b"ISO-8859-1", b"UTF-7", b"ascii", b"", b"\xff")) + b"\"?>" + body
        if kind == 1:
            return b"\xef\xbb\xbf" + data
        if kind == 2:
            return data.decode("utf-8", "replace").encode("utf-16")
        if kind == 3:
            return b"\n" + data
        if kind == 4:
            return data.replace(b"e", b"\xe9", rng.randint(1, 5))
        if kind == 5:
            return data.replace(b">", b">\x00", 1)
        return b"<?xml version=\"2.0\"?>" + body

    # -- line aware -------------------------------------------------------------------------
    @staticmethod
    def _lines(data):
        return data.splitlines(True) or [b""]

    def dup_lines(self, rng, data, _pool):
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        j = min(len(lines), i + rng.randint(1, 5))
        return b"".join(lines[:j] + lines[i:j] * rng.choice((1, 2, 3)) + lines[j:])

    def del_lines(self, rng, data, _pool):
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        return b"".join(lines[:i] + lines[i + rng.randint(1, 3):])

    def swap_lines(self, rng, data, _pool):
        lines = self._lines(data)
        rng.shuffle(lines)
        return b"".join(lines)

    def line_value(self, rng, data, _pool):
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        parts = re.split(rb"([\s:=;,]+)", lines[i])
        words = [k for k in range(0, len(parts), 2) if parts[k]]
        if not words:
            lines[i] = rng.choice(INTERESTING) + b"\n"
        else:
            k = rng.choice(words)
            parts[k] = rng.choice(INTERESTING)
            lines[i] = b"".join(parts)
        return b"".join(lines)

    def continuation(self, rng, data, _pool):
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        lines[i] = lines[i].rstrip(b"\r\n") + rng.choice((b" \\\n", b",\\\n", b"\\", b"\\\n\\\n"))
        if rng.random() < 0.3:
            del lines[i + 1:]
        return b"".join(lines)

    @staticmethod
    def brackets(rng, data, _pool):
        depth = rng.choice((3, 50, 1000, 5000))
        nest = b"[h=" * depth + b"1" + b"]" * (depth if rng.random() < 0.7 else 0)
        return data.rstrip(b"\n") + b"," + nest + b"\n"

    def repeat_lines(self, rng, data, _pool):
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        times = min(rng.choice((1000, 20000, 100000)), max(1, (8 << 20) // max(1, len(lines[i]))))
        return b"".join(lines[:i] + lines[i:i + 1] * times + lines[i:])

    def huge_line(self, rng, data, _pool):
        size = rng.choice((10 ** 4, 10 ** 5, 10 ** 6, 4 * 10 ** 6))
        filler = rng.choice((b"9", b"a", b"x ", b"\xc3\xa9", b",", b"["))
        lines = self._lines(data)
        i = rng.randrange(len(lines))
        lines.insert(i, (filler * (size // len(filler) + 1))[:size] + b"\n")
        return b"".join(lines)

    # -- JSON aware --------------------------------------------------------------------------
    _JSON_WEIRD = ("NaN", "Infinity", "-Infinity", "1e400", "-0", "1" * 5000, "\"\\ud800\"", "\"\\u0000\"",
                   "[]", "{}", "null", "true", "\"\"", "-1", "0", "1.5", "\"x\"", "9007199254740993",
                   "\"" + "a" * 100000 + "\"", "[[[[[[[[[[1]]]]]]]]]]", "{\"a\":{\"b\":{\"c\":[1,{}]}}}")

    def json_value(self, rng, data, _pool):
        try:
            doc = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            return self.insert(rng, data, _pool)
        holders = []

        def walk(node):
            if isinstance(node, dict):
                for key in node:
                    holders.append((node, key))
                    walk(node[key])
            elif isinstance(node, list):
                for i, item in enumerate(node):
                    holders.append((node, i))
                    walk(item)
        walk(doc)
        marker = "@@FUZZ@@"
        if not holders:
            return rng.choice(self._JSON_WEIRD).encode()
        holder, key = rng.choice(holders)
        if isinstance(holder, dict) and rng.random() < 0.25:
            del holder[key]
            return json.dumps(doc).encode()
        holder[key] = marker
        return json.dumps(doc).replace("\"%s\"" % marker, rng.choice(self._JSON_WEIRD), 1).encode()

    @staticmethod
    def json_deep(rng, data, _pool):
        depth = rng.choice((1000, 10000, 100000))
        opener, closer = rng.choice(((b"[", b"]"), (b"{\"a\":", b"}")))
        blob = opener * depth + b"1" + closer * depth
        i = data.find(b":")
        if i < 0:
            return blob
        end = data.find(b",", i)
        if end < 0:
            end = data.find(b"}", i)
        return data[:i + 1] + blob + data[end:] if end > 0 else data[:i + 1] + blob + b"}"


# ---------------------------------------------------------------------------------------------
# hypothesis strategies
# ---------------------------------------------------------------------------------------------

_TEXT = st.text(max_size=16)
_VALUE = st.one_of(
    st.sampled_from(INTERESTING).map(lambda b: b.decode("utf-8", "replace")),
    st.integers(-(2 ** 70), 2 ** 70).map(str),
    st.floats().map(repr),
    _TEXT,
    st.tuples(st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99)).map(
        lambda t: "%04d-%02d-%02dT%02d:%02d:%02d" % (t[0], t[1], t[2], t[2], t[1], t[1])),
    st.tuples(st.integers(-1, 99), st.integers(-1, 99), st.integers(-1, 3)).map(lambda t: "%d-%d:%d" % t),
)
_XSD = st.one_of(st.none(), st.sampled_from([u for u, _n in sge_xml.FLAVOURS]).map(lambda u: "http://%s/x.xsd" % u),
                 _TEXT)

JOB_FIELDS = ("JB_job_number", "JAT_prio", "JB_name", "JB_owner", "JB_project", "state", "JB_submission_time",
              "JAT_start_time", "queue_name", "slots", "tasks", "requested_PE", "requested_pe", "hard_request", "hard_req_queue",
              "granted_PE", "granted_pe", "master", "full_job_name")
DETAIL_FIELDS = ("JB_job_number", "JB_job_name", "JB_owner", "JB_project", "JB_submission_time", "JB_pe")
ATTRS = ("name", "state", "type", "xmlns:xsd", "resource_type")


def _esc(text, escape):
    text = str(text)
    if not escape:
        return text
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;")


def _render(node, escape=True):
    """(tag, attrs, text, children) -> XML text."""
    tag, attrs, text, children = node
    attr = "".join(" %s=\"%s\"" % (k, _esc(v, escape)) for k, v in attrs.items())
    inner = (_esc(text, escape) if text is not None else "") + "".join(_render(c, escape) for c in children)
    if text is None and not children:
        return "<%s%s/>" % (tag, attr)
    return "<%s%s>%s</%s>" % (tag, attr, inner, tag)


def _leaf(names):
    return st.tuples(st.sampled_from(names), st.dictionaries(st.sampled_from(ATTRS), _VALUE, max_size=2),
                     st.one_of(st.none(), _VALUE), st.just(()))


def _job_list():
    fields = st.lists(st.tuples(st.sampled_from(JOB_FIELDS), st.dictionaries(st.just("name"), _VALUE, max_size=1),
                                st.one_of(st.none(), _VALUE), st.just(())), max_size=8)
    state = st.dictionaries(st.just("state"), st.sampled_from(("running", "pending", "error", "zombie", "x")),
                            max_size=1)
    return st.tuples(st.just("job_list"), state, st.none(), fields)


def _queue_list(jobs):
    fields = st.lists(_leaf(("name", "qtype", "slots_used", "slots_resv", "slots_total", "load_avg", "arch",
                             "state", "resource")), max_size=6)
    return st.builds(lambda f, j: ("Queue-List", {}, None, tuple(f) + tuple(j)), fields, st.lists(jobs, max_size=3))


def _qhost_host():
    names = st.sampled_from(("arch_string", "num_proc", "m_socket", "load_avg", "mem_total", "mem_used",
                             "swap_total", "swap_used")) | _TEXT
    values = st.lists(st.tuples(st.just("hostvalue"), st.dictionaries(st.just("name"), names, max_size=1),
                                st.one_of(st.none(), _VALUE), st.just(())), max_size=8)
    qvalues = st.lists(st.tuples(st.just("queuevalue"), st.dictionaries(
        st.just("name"), st.sampled_from(("qtype_string", "slots", "slots_used", "slots_resv", "state_string"))
        | _TEXT, max_size=1), st.one_of(st.none(), _VALUE), st.just(())), max_size=5)
    queue = st.builds(lambda a, q: ("queue", a, None, tuple(q)), st.dictionaries(st.just("name"), _VALUE, max_size=1),
                      qvalues)
    return st.builds(lambda a, v, q: ("host", a, None, tuple(v) + tuple(q)),
                     st.dictionaries(st.just("name"), st.one_of(st.just("global"), _VALUE), max_size=1),
                     values, st.lists(queue, max_size=3))


def _detailed_job():
    rn = st.lists(_leaf(("RN_min", "RN_max", "RN_step")), max_size=4)
    ranges = st.builds(lambda r: ("ulong_sublist", {}, None, tuple(r)), rn)
    ja = st.lists(_leaf(("JAT_task_number", "JAT_start_time", "JG_qname", "JG_slots")), max_size=8)
    req = st.lists(_leaf(("CE_name", "CE_stringval")), max_size=4)
    parts = st.lists(st.one_of(
        _leaf(DETAIL_FIELDS),
        st.builds(lambda r: ("JB_ja_structure", {}, None, (r,)), ranges),
        st.builds(lambda r: ("JB_pe_range", {}, None, (r,)), ranges),
        st.builds(lambda j: ("JB_ja_tasks", {}, None, (("element", {}, None, tuple(j)),)), ja),
        st.builds(lambda r: ("JB_hard_resource_list", {}, None, tuple(r)), req),
        st.builds(lambda q: ("JB_hard_queue_list", {}, None, tuple(q)), st.lists(_leaf(("QR_name",)), max_size=3)),
    ), max_size=10)
    return st.builds(lambda p: ("element", {}, None, tuple(p)), parts)


def _cqs():
    return st.builds(lambda f: ("cluster_queue_summary", {}, None, tuple(f)),
                     st.lists(_leaf(("name", "load", "used", "resv", "available", "total", "temp_disabled",
                                     "manual_intervention")), max_size=9))


def _random_element():
    return st.recursive(_leaf(JOB_FIELDS + ("a", "element", "job_list", "host", "queue_info")),
                        lambda kids: st.tuples(st.sampled_from(("job_list", "queue_info", "element", "host",
                                                                "Queue-List", "a")),
                                               st.dictionaries(st.sampled_from(ATTRS), _VALUE, max_size=2),
                                               st.one_of(st.none(), _VALUE), st.lists(kids, max_size=4).map(tuple)),
                        max_leaves=30)


def _document(root, body):
    """Bytes of a document with root ``root`` (or another) and children from ``body``."""
    def build(root_tag, xsd, children, decl, escape, encoding):
        attrs = {"xmlns:xsd": xsd} if xsd is not None else {}
        text = _render((root_tag, attrs, None, tuple(children)), escape)
        if decl:
            text = "<?xml version='1.0'?>\n" + text
        return text.encode(encoding, "surrogatepass" if encoding == "utf-8" else "replace")
    return st.builds(build, st.one_of(st.just(root), st.sampled_from(("job_info", "qhost", "detailed_job_info",
                                                                      "unknown_jobs", "x"))),
                     _XSD, st.lists(body, max_size=4), st.booleans(),
                     st.sampled_from((True,) * 9 + (False,)), st.sampled_from(("utf-8",) * 9 + ("latin-1",)))


def qstat_documents():
    job = _job_list()
    info = st.builds(lambda j: ("queue_info", {}, None, tuple(j)), st.lists(st.one_of(_queue_list(job), job),
                                                                            max_size=3))
    pending = st.builds(lambda j: ("job_info", {}, None, tuple(j)), st.lists(job, max_size=3))
    return _document("job_info", st.one_of(info, pending, job, _cqs(), _random_element()))


def qhost_documents():
    return _document("qhost", st.one_of(_qhost_host(), _random_element()))


def qstat_j_documents():
    return _document("detailed_job_info", st.one_of(
        st.builds(lambda j: ("djob_info", {}, None, tuple(j)), st.lists(_detailed_job(), max_size=3)),
        _detailed_job(), _random_element()))


def qstat_gc_documents():
    return _document("job_info", st.one_of(_cqs(), _random_element()))


def _kv_text(keys, sep=" ", record=None):
    key = st.one_of(st.sampled_from(keys), st.text(min_size=1, max_size=12))
    line = st.builds(lambda k, v, pad: "%s%s%s" % (k, sep * pad, v), key, _VALUE, st.integers(1, 12))
    block = st.lists(line, max_size=14).map("\n".join)
    if record:
        return st.lists(block, min_size=1, max_size=4).map((("\n" + record + "\n").join))
    return block


QACCT_KEYS = ("qname", "hostname", "group", "owner", "project", "department", "jobname", "jobnumber", "taskid",
              "account", "priority", "qsub_time", "start_time", "end_time", "granted_pe", "slots", "failed",
              "exit_status", "ru_wallclock", "cpu", "mem", "io", "maxvmem")
QCONF_KEYS = sge_admin.QUEUE_ATTRIBUTES + sge_admin.EXEC_HOST_ATTRIBUTES + ("group_name", "load_values")


def qacct_texts():
    return st.one_of(_kv_text(QACCT_KEYS, record="=" * 62), st.text())


def qconf_texts():
    value = st.one_of(_VALUE, st.lists(st.one_of(_VALUE, st.builds("[{}={}]".format, _VALUE, _VALUE)),
                                       max_size=5).map(",".join))
    line = st.builds(lambda k, v, cont: "%s %s%s" % (k, v, " \\" if cont else ""),
                     st.one_of(st.sampled_from(QCONF_KEYS), _TEXT), value, st.booleans())
    return st.one_of(st.lists(line, max_size=12).map("\n".join), st.text())


def rqs_texts():
    rule = st.builds("projects {} hosts {{{}}} to slots={}".format, _VALUE, _VALUE, _VALUE)
    line = st.one_of(st.builds("   name         {}".format, _VALUE), st.builds("   limit        {}".format, rule),
                     st.builds("   {} {}".format, st.sampled_from(("description", "enabled", "limit")), _VALUE),
                     st.sampled_from(("{", "}", "", "#x")))
    return st.one_of(st.lists(line, max_size=12).map("\n".join), st.text())


def hostgroup_texts():
    name = st.one_of(st.from_regex(r"\A@[a-z]{1,3}\Z"), _VALUE)
    block = st.builds(lambda n, hosts: "group_name %s\nhostlist %s" % (n, " ".join(hosts) or "NONE"), name,
                      st.lists(st.one_of(st.from_regex(r"\A@[a-z]{1,3}\Z"), st.from_regex(r"\Anode[0-9]{1,2}\Z"),
                                         _VALUE), max_size=6))
    return st.one_of(st.lists(block, max_size=8).map("\n".join), st.text())


def swf_texts():
    field = st.one_of(st.integers(-2, 10 ** 6).map(str), st.sampled_from(("-1", "0", "1e309", "nan", "1.5", "x")),
                      st.floats().map(repr))
    line = st.one_of(st.lists(field, min_size=18, max_size=18).map(" ".join),
                     st.lists(field, max_size=20).map(" ".join),
                     st.builds("; {}: {}".format, _TEXT, _TEXT), _TEXT)
    return st.lists(line, max_size=20).map("\n".join)


def settings_texts():
    line = st.one_of(st.builds("{}={}; export {}".format, st.sampled_from(sge_cmd._SETTINGS_KEYS) | _TEXT,  # pylint: disable=protected-access
                               _VALUE, _TEXT), _TEXT)
    return st.lists(line, max_size=8).map("\n".join)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=20)
_JSON_KEYS = ("version", "jobs", "moves", "tasks", "live", "job", "task", "source", "target", "schema",
              "operations", "node", "operation", "started", "detail", "token", "owner", "acquired", "expires",
              "cluster", "local", "remote", "jobs_dir", "bin_dir", "remote_id", "name", "0", "logs", "logs/0")


def json_documents():
    shaped = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
                          | st.sampled_from(("0123456789abcdef0123456789abcdef", "node001", "join", "leave", "logs")),
                          lambda kids: st.lists(kids, max_size=4)
                          | st.dictionaries(st.sampled_from(_JSON_KEYS) | st.text(max_size=6), kids, max_size=6),
                          max_leaves=30)
    return st.one_of(shaped, _JSON).map(lambda doc: json.dumps(doc).encode("utf-8", "surrogatepass"))


def csv_texts():
    cell = st.one_of(_VALUE, st.floats().map(repr), st.integers().map(str), st.just(""),
                     st.datetimes().map(lambda d: d.isoformat() + "Z"))
    return st.lists(st.lists(cell, max_size=14).map(",".join), max_size=6).map("\n".join)


def rrule_texts():
    part = st.one_of(st.builds("FREQ={}".format, st.sampled_from(("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY",
                                                                  "MINUTELY", "SECONDLY", "X")) | _TEXT),
                     st.builds("INTERVAL={}".format, _VALUE), st.builds("COUNT={}".format, _VALUE),
                     st.builds("BYDAY={}".format, _VALUE), st.builds("BYMONTHDAY={}".format, _VALUE),
                     st.builds("BYMONTH={}".format, _VALUE), st.builds("BYHOUR={}".format, _VALUE),
                     st.builds("UNTIL={}".format, _VALUE), st.builds("BYSETPOS={}".format, _VALUE))
    start = st.one_of(st.builds("DTSTART:{:04d}{:02d}{:02d}T{:02d}{:02d}{:02d}Z".format, st.integers(0, 9999),
                                *[st.integers(0, 99)] * 5),
                      st.builds("DTSTART;TZID={}:20240101T000000".format, st.sampled_from(("UTC", "Europe/Oslo"))
                                | _TEXT), _TEXT)
    return st.builds(lambda s, p: "%s RRULE:%s" % (s, ";".join(p)), start, st.lists(part, max_size=6))


def tar_archives():
    member = st.tuples(st.one_of(st.sampled_from(("a", "sub/b", "./c", "../x", "/etc/x", "a/../../x", "", ".")),
                                 _TEXT),
                       st.sampled_from((tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE,
                                        tarfile.FIFOTYPE, tarfile.CHRTYPE, b"Z")),
                       st.one_of(st.sampled_from(("a", "../../etc/passwd", "/etc/passwd", "")), _TEXT),
                       st.binary(max_size=64), st.integers(0, 0o7777))

    def build(members):
        buf = io.BytesIO()
        try:
            with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name, kind, link, content, mode in members:
                    info = tarfile.TarInfo(name)
                    info.type = kind
                    info.linkname = link
                    info.mode = mode
                    if kind == tarfile.REGTYPE:
                        info.size = len(content)
                        tar.addfile(info, io.BytesIO(content))
                    else:
                        tar.addfile(info)
        except (ValueError, UnicodeError, tarfile.TarError):
            return b"not a tar archive"
        return buf.getvalue()
    return st.lists(member, max_size=5).map(build)


# ---------------------------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------------------------

class Target(object):
    """One parser: ``call(input)``; ``errors``: the documented parse error(s) (empty: the parser
    documents none, every exception is a crash); ``fmt``: seed format; ``make`` (mutation) and
    ``strategy`` (hypothesis) produce inputs; ``weight``: share of the inputs."""

    def __init__(self, name, where, call, errors, documented, fmt, strategy, make=None, weight=1.0, convert=None):
        self.name = name
        self.where = where
        self.call = call
        self.errors = tuple(errors)
        self.documented = documented
        self.fmt = fmt
        self.strategy = strategy
        self.make = make
        self.weight = weight
        self.convert = convert or (lambda data: data)


class Workspace(object):
    """Temporary files of one run: the secret file the entities point at, and files the file
    parsers read."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fuzz-parsers-")
        self.secret = os.path.join(self.dir, _SECRET_NAME)
        with open(self.secret, "w") as handle:
            handle.write(SECRET_MARK + "\n")
        self.file = os.path.join(self.dir, "input")
        self.sge_root = os.path.join(self.dir, "sge")
        os.makedirs(os.path.join(self.sge_root, "default", "common"))
        self.jobs_dir = os.path.join(self.dir, "jobs")
        os.makedirs(self.jobs_dir)
        self.data_root = os.path.join(self.dir, "data")
        os.makedirs(self.data_root)

    def write(self, data, path=None):
        path = path or self.file
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _text(data):
    """Text as AnsibleModule.run_command returns it (undecodable bytes as surrogates)."""
    return data.decode("utf-8", "surrogateescape")


def _strict_text(data):
    """Text as a subprocess with universal_newlines returns it (the command's bytes were UTF-8)."""
    return data.decode("utf-8", "replace")


def _enc(text):
    return text.encode("utf-8", "surrogatepass")


def _transfer_targets(ws, xml_strategies, text_value, json_strategy, file_call):
    """The parsers of the transfer-queue scripts (the functions present in this version)."""
    cfg = {"local": {"root": "/var/lib/gridengine", "cell": "default"}, "jobs_dir": ws.jobs_dir, "bin_dir": "/usr/bin",
           "remote": {"name": "partner", "root": "/var/lib/gridengine", "cell": "partner"}}
    caught = "xml.etree.ElementTree.ParseError (what poll_partner and sensor_status catch)"
    where = "plugins/module_utils/transfer.py"

    def qacct(text):
        return [transfer.exit_status_of(rec) for rec in transfer.parse_qacct(text)]

    def records(data):
        ws.write(data, os.path.join(ws.jobs_dir, "42.0.json"))
        return transfer_remote._records(cfg, "42", None)  # pylint: disable=protected-access

    candidates = [
        ("parse_qsub_terse", transfer.parse_qsub_terse, (transfer.TransferError,), "TransferError", "terse",
         text_value, 1),
        ("parse_qstat_j", transfer.parse_qstat_j, (), "none", "qstat_j_text", text_value, 1),
        ("parse_local_job", getattr(transfer, "parse_local_job", None), (), "none", "qstat_j_text", text_value, 1),
        ("parse_qacct", qacct, (), "none", "qacct", qacct_texts().map(_enc), 1),
        ("parse_jobs", getattr(transfer, "parse_jobs", None), (ET.ParseError, ValueError),
         "ParseError, ValueError (what poll_partner catches)", "xml", xml_strategies["qstat"], 2),
        ("count_pending", None if hasattr(transfer, "parse_jobs") else getattr(transfer, "count_pending", None),
         (ET.ParseError,), caught, "xml", xml_strategies["qstat"], 2),
        ("cluster_slots", getattr(transfer, "cluster_slots", None), (ET.ParseError,), caught, "xml",
         xml_strategies["qstat_gc"], 2),
        ("free_slots", None if hasattr(transfer, "cluster_slots") else getattr(transfer, "free_slots", None),
         (ET.ParseError,), caught, "xml", xml_strategies["qstat_gc"], 2),
        ("cluster_memory", getattr(transfer, "cluster_memory", None), (ET.ParseError,), caught, "xml",
         xml_strategies["qhost"], 1),
        ("load_config", file_call(transfer.load_config), (transfer.TransferError, ValueError, OSError),
         "TransferError, ValueError, OSError (what main catches)", "json", json_strategy, 1),
        ("read_own_json", file_call(transfer.read_own_json), (transfer.TransferError,),
         "TransferError (None when not JSON)", "json", json_strategy, 1),
    ]
    out = []
    for name, func, errors, documented, fmt, strategy, weight in candidates:
        if func is not None:
            out.append(Target("transfer." + name, where, func, errors, documented, fmt, strategy, weight=weight,
                              convert=_strict_text if fmt != "json" else None))
    out.append(Target("transfer_remote.parse_job", "plugins/module_utils/transfer_remote.py",
                      transfer_remote.parse_job, (transfer.TransferError,), "TransferError", "terse", text_value,
                      convert=_strict_text))
    out.append(Target("transfer_remote._records", "plugins/module_utils/transfer_remote.py", records, (),
                      "none (unreadable records skipped)", "json", json_strategy))
    return out


def build_targets(ws, corpus):
    """Every parser of external text in the collection, as :class:`Target` objects."""
    xml_err = (sge_xml.SgeParseError,)
    tar_seed, tar_checksum = corpus.tar

    def snapshot(pair):
        qstat_bytes, qhost_bytes, queues = pair
        return sge_xml.build_snapshot(qstat_bytes, qhost_bytes, 1.7e9, "default", queues=queues, strict_schema=False)

    def make_snapshot(rng, mut):
        qstat_bytes = rng.choice(corpus.qstat or corpus.formats["xml"])
        qhost_bytes = rng.choice(corpus.qhost or corpus.formats["xml"])
        if rng.random() < 0.7:
            qstat_bytes = mut.mutate(rng, qstat_bytes, "xml", corpus.formats["xml"])
        else:
            qhost_bytes = mut.mutate(rng, qhost_bytes, "xml", corpus.formats["xml"])
        return qstat_bytes, qhost_bytes, rng.choice((None, None, ["all.q"], ["*"], ["all.q", "big.q"]))

    def qacct(data):
        records = sge_xml.parse_qacct(data)
        return sge_xml.accounting_summary(records, 2e9, 2e9)

    def value_call(func):
        def call(data):
            return func(data.decode("utf-8", "replace"))
        return call

    def make_value(rng, mut):
        data = rng.choice(corpus.values) if rng.random() < 0.6 else rng.choice(INTERESTING) + rng.choice(
            (b"", b"", b"K", b"M", b"G", b"k", b"-", b":1"))
        return mut.mutate(rng, data, "text", corpus.values) if rng.random() < 0.6 else data

    def rqs(text):
        obj = sge_rqs.parse_rqs(text)
        return obj, [sge_rqs.parse_rule(rule) for rule in obj["limits"]]

    def qconf_object(text):
        obj = sge_admin.parse_object(text)
        out = {}
        for key, value in obj.items():
            out[key] = (sge_admin.canonical(key, value), sge_admin.split_value(value), sge_admin.parse_pairs(value))
        return out

    def settings_file(data):
        ws.write(data, os.path.join(ws.sge_root, "default", "common", "settings.sh"))
        values = sge_cmd.read_settings(ws.sge_root, "default")
        return values, sge_cmd.sge_environment(ws.sge_root, "default", None, values)

    def hostgroups(text):
        warnings = []
        groups = sge_inventory.parse_hostgroups(text, warnings)
        return sge_inventory.resolve_hostgroups(groups, warnings), warnings

    def inventory(args):
        qhost_bytes, groups_bytes, master = args
        return sge_inventory.build_inventory(qhost_bytes, groups_bytes, None, master, strict_schema=False)

    def make_hostgroups(rng, mut):
        if rng.random() < 0.03:
            data = _hostgroup_structure(rng)
        else:
            data = rng.choice(corpus.formats["hostgroups"] or [b""])
        return mut.mutate(rng, data, "text", corpus.formats["hostgroups"]) if rng.random() < 0.9 else data

    def make_inventory(rng, mut):
        qhost_bytes = rng.choice(corpus.qhost or corpus.formats["xml"])
        groups_bytes = make_hostgroups(rng, mut) if rng.random() < 0.1 else (
            rng.choice(corpus.formats["hostgroups"]) if corpus.formats["hostgroups"] else b"")
        if rng.random() < 0.6:
            qhost_bytes = mut.mutate(rng, qhost_bytes, "xml", corpus.formats["xml"])
        else:
            groups_bytes = mut.mutate(rng, groups_bytes, "text", corpus.formats["hostgroups"])
        master = _strict_text(rng.choice(corpus.values)) if rng.random() < 0.3 else None
        return qhost_bytes, groups_bytes, master

    def swf_parse(data):
        trace = swf.parse(_strict_text(data).splitlines(True), name="fuzz.swf")
        return trace.machine_procs(), len(trace.jobs)

    def make_swf(rng, mut):
        return mut.mutate(rng, corpus.swf_chunk(rng), "text", [corpus.swf_chunk(rng)])

    def file_call(func):
        def call(data):
            return func(ws.write(data))
        return call

    def lock(path):
        record = balancer_lock.read_lock(path)
        if record is None:
            return None
        return balancer_lock.public(record, now=1.7e9), balancer_lock.held_message(record, path, 1.7e9)

    def registry(path):
        return task_registry.read(path)

    def node_record(data):
        os.makedirs(os.path.join(ws.dir, "nodes", "node001"), exist_ok=True)
        ws.write(data, os.path.join(ws.dir, "nodes", "node001", local_node.RECORD))
        return local_node.read_record(os.path.join(ws.dir, "nodes"), "node001")

    def stats_rows(data):
        return stats.read_rows(ws.write(data))

    def stats_append(data):
        path = ws.write(data)
        return stats.write_row(path, {"time": 1.8e9, "hosts": 2, "running_jobs": 1, "queued_jobs": 0, "slots": 4,
                                      "avg_duration": None, "avg_wait": None, "avg_load": 0.5},
                               instance_hour_price=0.1)

    def receive(data):
        archive = ws.write(data, os.path.join(ws.dir, "copy.tar"))
        try:
            return task_data.receive(ws.data_root, "job1", "0", archive, tar_checksum)
        finally:
            shutil.rmtree(os.path.join(ws.data_root, "job1"), ignore_errors=True)

    def make_tar(rng, mut):
        return mut.mutate(rng, tar_seed, "text", [tar_seed])

    xml_strategies = {"qstat": qstat_documents(), "qhost": qhost_documents(), "qstat_j": qstat_j_documents(),
                      "qstat_gc": qstat_gc_documents()}
    snapshot_strategy = st.tuples(xml_strategies["qstat"], xml_strategies["qhost"],
                                  st.sampled_from((None, ["all.q"], ["*"])))
    inventory_strategy = st.tuples(xml_strategies["qhost"], hostgroup_texts().map(_enc), st.none() | _TEXT)
    value_strategy = st.one_of(_VALUE, st.builds(lambda v, u: v.decode("utf-8", "replace") + u,
                                                 st.sampled_from(INTERESTING), st.sampled_from(("", "K", "G", "m", "-")))
                               ).map(_enc)
    text_value = st.one_of(_VALUE, st.text()).map(_enc)

    def mu(fn):
        return "plugins/module_utils/" + fn

    def pu(fn):
        return "plugins/plugin_utils/" + fn

    return [
        Target("sge_xml.parse_qstat", mu("sge_xml.py"), lambda d: sge_xml.parse_qstat(d, strict_schema=False),
               xml_err, "SgeParseError", "xml", xml_strategies["qstat"], weight=5),
        Target("sge_xml.parse_qhost", mu("sge_xml.py"), lambda d: sge_xml.parse_qhost(d, strict_schema=False),
               xml_err, "SgeParseError", "xml", xml_strategies["qhost"], weight=4),
        Target("sge_xml.parse_qstat_j", mu("sge_xml.py"), lambda d: sge_xml.parse_qstat_j(d, strict_schema=False),
               xml_err, "SgeParseError", "xml", xml_strategies["qstat_j"], weight=4),
        Target("sge_xml.parse_qstat_gc", mu("sge_xml.py"), lambda d: sge_xml.parse_qstat_gc(d, strict_schema=False),
               xml_err, "SgeParseError", "xml", xml_strategies["qstat_gc"], weight=3),
        Target("sge_xml.build_snapshot", mu("sge_xml.py"), snapshot, xml_err, "SgeParseError", "xml",
               snapshot_strategy, make=make_snapshot, weight=3),
        Target("sge_xml.parse_qacct", mu("sge_xml.py"), qacct, xml_err, "SgeParseError", "qacct",
               qacct_texts().map(_enc), weight=3),
        Target("sge_xml.parse_time", mu("sge_xml.py"), value_call(sge_xml.parse_time), (ValueError,), "ValueError",
               "values", value_strategy, make=make_value, weight=2),
        Target("sge_xml.task_count", mu("sge_xml.py"), value_call(sge_xml.task_count), (ValueError,), "ValueError",
               "values", value_strategy, make=make_value, weight=2),
        Target("sge_xml.range_minimum", mu("sge_xml.py"), value_call(sge_xml.range_minimum), (ValueError,),
               "ValueError", "values", value_strategy, make=make_value, weight=2),
        Target("sge_xml.parse_memory", mu("sge_xml.py"), value_call(sge_xml.parse_memory), (), "none (None)",
               "values", value_strategy, make=make_value, weight=2),
        Target("sge_rqs.parse_rqs", mu("sge_rqs.py"), rqs, (sge_rqs.RqsError,), "RqsError", "rqs",
               rqs_texts().map(_enc), convert=_text, weight=2),
        Target("sge_admin.parse_object", mu("sge_admin.py"), qconf_object, (), "none", "qconf",
               qconf_texts().map(_enc), convert=_text, weight=3),
        Target("sge_admin.parse_list", mu("sge_admin.py"), sge_admin.parse_list, (), "none", "names",
               text_value, convert=_text),
        Target("sge_submit.parse_terse", mu("sge_submit.py"), sge_submit.parse_terse, (sge_submit.SubmitError,),
               "SubmitError", "terse", text_value, convert=_text),
        Target("sge_cmd.read_settings", mu("sge_cmd.py"), settings_file, (), "none ({} when unreadable)",
               "settings", settings_texts().map(_enc)),
        Target("sge_inventory.parse_hostgroup_names", pu("sge_inventory.py"),
               lambda d: sge_inventory.parse_hostgroup_names(d, []), (), "none (warnings)", "names", text_value),
        Target("sge_inventory.parse_hostgroups", pu("sge_inventory.py"), hostgroups,
               (sge_inventory.InventoryDataError,), "InventoryDataError", "hostgroups", hostgroup_texts().map(_enc),
               make=make_hostgroups, weight=2),
        Target("sge_inventory.build_inventory", pu("sge_inventory.py"), inventory,
               (sge_inventory.InventoryDataError,), "InventoryDataError", "xml", inventory_strategy,
               make=make_inventory, weight=3),
        Target("sim.swf.parse", pu("sim/swf.py"), swf_parse, (swf.SwfError,), "SwfError", "swf",
               swf_texts().map(_enc), make=make_swf, weight=2),
        Target("balancer_state.read_state", mu("balancer_state.py"), file_call(balancer_state.read_state),
               (balancer_state.StateFileError,), "StateFileError", "json", json_documents(), weight=2),
        Target("balancer_journal.read_journal", mu("balancer_journal.py"), file_call(balancer_journal.read_journal),
               (balancer_journal.JournalError,), "JournalError", "json", json_documents(), weight=2),
        Target("balancer_lock.read_lock", mu("balancer_lock.py"), file_call(lock), (balancer_lock.LockError,),
               "LockError (LockCorrupt)", "json", json_documents(), weight=2),
        Target("task_registry.read", mu("task_registry.py"), file_call(registry), (task_registry.RegistryError,),
               "RegistryError", "json", json_documents(), weight=2),
    ] + _transfer_targets(ws, xml_strategies, text_value, json_documents(), file_call) + [
        Target("local_node.read_record", mu("local_node.py"), node_record, (), "none (None when unreadable)",
               "json", json_documents()),
        Target("local_node.parse_bridge_address", mu("local_node.py"), local_node.parse_bridge_address, (),
               "none ((None, message))", "values", value_strategy, make=make_value, convert=_strict_text),
        Target("stats.read_rows", pu("stats.py"), stats_rows, (), "none (malformed lines skipped)", "csv",
               csv_texts().map(_enc)),
        Target("stats.write_row", pu("stats.py"), stats_append, (), "none (malformed lines skipped)", "csv",
               csv_texts().map(_enc), weight=0.5),
        Target("awx_defs.parse_rrule", "tests/unit/awx_defs.py", awx_defs.parse_rrule, (ValueError,), "ValueError",
               "rrule", rrule_texts().map(_enc), convert=_strict_text, weight=0.5),
        Target("task_data.receive", mu("task_data.py"), receive, (task_data.TaskDataError,), "TaskDataError",
               "tar", tar_archives(), make=make_tar, weight=0.4),
    ]


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------

class Hang(BaseException):
    """Raised by the alarm when one input runs over the time limit."""


class _Watch(object):
    active = False
    forbidden = ()
    seen = []


def _audit(event, args):
    if not _Watch.active:
        return
    if event == "open":
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if isinstance(path, str) and (path in _Watch.forbidden or _SECRET_NAME in path):
            _Watch.seen.append("open %s" % path)
    elif event.startswith(_FORBIDDEN_EVENTS):
        _Watch.seen.append("%s %r" % (event, args[:2] if isinstance(args, tuple) else args))


_HOOKED = []


def install_audit_hook(secret):
    _Watch.forbidden = FORBIDDEN_PATHS + (secret,)
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED.append(True)


def _on_alarm(_signum, _frame):
    raise Hang()


class Stats(object):
    """Outcome counts of one target (picklable)."""

    def __init__(self, name):
        self.name = name
        self.inputs = 0
        self.accepted = 0
        self.errors = 0
        self.crashes = 0
        self.max_seconds = 0.0
        self.slowest = ""
        self.samples = collections.OrderedDict()   # signature -> [count, text]
        self.mutation = 0
        self.hypothesis = 0
        self.max_rss_kb = 0

    def merge(self, other):
        for key in ("inputs", "accepted", "errors", "crashes", "mutation", "hypothesis"):
            setattr(self, key, getattr(self, key) + getattr(other, key))
        if other.max_seconds > self.max_seconds:
            self.max_seconds, self.slowest = other.max_seconds, other.slowest
        self.max_rss_kb = max(self.max_rss_kb, other.max_rss_kb)
        for sig, (count, text) in other.samples.items():
            if sig in self.samples:
                self.samples[sig][0] += count
            else:
                self.samples[sig] = [count, text]

    def crash(self, signature, text):
        self.crashes += 1
        if signature in self.samples:
            self.samples[signature][0] += 1
        else:
            self.samples[signature] = [1, text]


def describe_input(data, limit=160):
    if isinstance(data, tuple):
        return "(" + ", ".join(describe_input(d, limit // 2) for d in data) + ")"
    size = len(data) if hasattr(data, "__len__") else 0
    text = repr(data[:limit]) if hasattr(data, "__getitem__") else repr(data)
    return "%s%s (%d %s)" % (text, "..." if size > limit else "", size, "bytes" if isinstance(data, bytes) else "chars")


def _short_traceback(exc):
    """Frames of the collection (plugins/), innermost last, and the exception line."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/plugins/" in f.filename.replace(os.sep, "/")] or frames[-1:]
    where = ["%s:%d %s" % (f.filename.replace(os.sep, "/").split("/plugins/")[-1], f.lineno or 0, f.name)
             for f in ours[-4:]]
    line = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(line) > 300:
        line = line[:300] + "..."
    return where, line


def _invoke(target, data, limit):
    """Call the parser once: ``(outcome, signature, text, seconds)``."""
    outcome, signature, text = "accepted", None, None
    signal.signal(signal.SIGALRM, _on_alarm)
    start = time.perf_counter()
    try:
        try:
            _Watch.active = True
            signal.setitimer(signal.ITIMER_REAL, limit)
            result = target.call(data)
            signal.setitimer(signal.ITIMER_REAL, 0)
            _Watch.active = False
            if result is not None and _mentions(data, b"SYSTEM") and not _mentions(data, SECRET_MARK.encode()):
                if SECRET_MARK in repr(result)[:1 << 22] or "root:x:0:0" in repr(result)[:1 << 22]:
                    outcome, signature = "crash", ("leak", target.name)
                    text = "the content of an external entity reached the result"
        except KeyboardInterrupt:
            raise
        except Hang:
            raise
        except BaseException as exc:  # pylint: disable=broad-exception-caught
            signal.setitimer(signal.ITIMER_REAL, 0)
            _Watch.active = False
            documented = isinstance(exc, target.errors) and (
                not isinstance(exc, UnicodeError) or any(issubclass(e, UnicodeError) for e in target.errors))
            if documented:
                outcome = "error"
            else:
                outcome = "crash"
                where, line = _short_traceback(exc)
                signature = (type(exc).__name__, where[-1] if where else "")
                text = "%s\n    at %s" % (line, "\n    <- ".join(reversed(where)))
    except Hang as exc:
        where, _line = _short_traceback(exc)
        outcome, signature = "crash", ("Hang", where[-1] if where else target.name)
        text = "no answer within %.0f s (stopped by the alarm)%s" % (
            limit, "\n    at %s" % "\n    <- ".join(reversed(where)) if where else "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _Watch.active = False
    return outcome, signature, text, time.perf_counter() - start


def _mentions(data, needle):
    if isinstance(data, tuple):
        return any(_mentions(d, needle) for d in data)
    if isinstance(data, str):
        return needle.decode() in data
    return isinstance(data, (bytes, bytearray)) and needle in data


def run_one(target, data, stats_, limit, origin):
    """Feed one input; update ``stats_``. Returns the outcome: accepted, error or crash."""
    _Watch.seen = []
    outcome, signature, text, elapsed = _invoke(target, data, limit)
    if _Watch.seen:
        outcome = "crash"
        signature = ("forbidden access", _Watch.seen[0].split(" ")[0])
        text = "the parser tried: %s" % "; ".join(_Watch.seen[:3])
    elif outcome != "crash" and elapsed > limit:
        outcome = "crash"
        signature = ("Slow", target.name)
        text = "took %.1f s (limit %.0f s)" % (elapsed, limit)
    stats_.inputs += 1
    if origin == "mutation":
        stats_.mutation += 1
    else:
        stats_.hypothesis += 1
    if elapsed > stats_.max_seconds:
        stats_.max_seconds = elapsed
        stats_.slowest = describe_input(data, 80)
    if outcome == "accepted":
        stats_.accepted += 1
    elif outcome == "error":
        stats_.errors += 1
    else:
        stats_.crash(signature, "%s\n    input (%s #%s): %s" % (text, origin, stats_.inputs, describe_input(data)))
    return outcome


def mutation_input(target, corpus, mutator, seed, index):
    """The ``index``-th mutation input of ``target`` (deterministic in seed and index)."""
    rng = random.Random("%s:%s:%d" % (seed, target.name, index))
    if target.make is not None:
        data = target.make(rng, mutator)
    elif target.fmt == "values":
        data = mutator.mutate(rng, rng.choice(corpus.values), "text", corpus.values)
    elif target.fmt == "swf":
        data = mutator.mutate(rng, corpus.swf_chunk(rng), "text", [corpus.swf_chunk(rng)])
    else:
        pool = corpus.formats[target.fmt] or [b""]
        data = rng.choice(pool)
        if rng.random() < 0.95:
            data = mutator.mutate(rng, data, target.fmt, pool)
    if isinstance(data, tuple):
        return data
    return target.convert(data)


def run_target(target, corpus, mutator, seed, n_mutation, n_hypothesis, limit=5.0, start=(0, 0), skip=(),
               progress=None, report=None, every=200):
    """Feed ``n_mutation`` mutated and ``n_hypothesis`` generated inputs to ``target``; returns
    the :class:`Stats` (of the inputs not yet given to ``report``).

    ``start`` (phase, index) skips inputs already done and ``skip`` holds (phase, index) pairs
    not to run (inputs that killed an earlier child process); ``progress`` (two shared ints) is
    told (phase, index) before each input; ``report(stats, next_position)`` is called every
    ``every`` inputs with the counts since the previous call.
    """
    previous = signal.getsignal(signal.SIGALRM)
    try:
        return _run_target(target, corpus, mutator, seed, n_mutation, n_hypothesis, limit, start, skip, progress,
                           report, every)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _run_target(target, corpus, mutator, seed, n_mutation, n_hypothesis, limit, start, skip, progress, report,
                every):
    holder = [Stats(target.name)]
    skip = set(skip)

    def step(phase, index, value, origin):
        if progress is not None:
            progress[0], progress[1] = phase, index
        run_one(target, value, holder[0], limit, origin)
        if report is not None and holder[0].inputs >= every:
            report(holder[0], (phase, index + 1))
            holder[0] = Stats(target.name)

    if start[0] == 0:
        for index in range(start[1], n_mutation):
            if (0, index) not in skip:
                step(0, index, mutation_input(target, corpus, mutator, seed, index), "mutation")
        first = 0
    else:
        first = start[1]
    if report is not None and holder[0].inputs:
        report(holder[0], (1, first))
        holder[0] = Stats(target.name)
    if n_hypothesis <= 0:
        return holder[0]
    counter = [0]

    @hypothesis_seed(int(seed) * 7919 + sum(target.name.encode()))
    @settings(max_examples=n_hypothesis, database=None, deadline=None, phases=[Phase.generate], derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(st.data())
    def fuzz(data):
        value = data.draw(target.strategy)
        index = counter[0]          # counted after the draw: hypothesis drops overrun examples
        counter[0] += 1
        if index < first or index >= n_hypothesis or (1, index) in skip:
            return
        if not isinstance(value, tuple):
            value = target.convert(value)
        step(1, index, value, "hypothesis")

    fuzz()  # pylint: disable=no-value-for-parameter
    return holder[0]


def split_inputs(targets, total):
    """Inputs per target ``{name: (mutation, hypothesis)}``: shares of ``total`` by weight (largest
    remainders, so that they add up to ``total``; at least 2 each), 60 % of each by mutation."""
    weights = sum(t.weight for t in targets)
    quotas = [total * t.weight / weights for t in targets]
    shares = [int(q) for q in quotas]
    order = sorted(range(len(targets)), key=lambda i: (-(quotas[i] - shares[i]), i))
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    out = {}
    for target, n in zip(targets, shares):
        n = max(2, n)
        mutation = int(round(n * 0.6))
        out[target.name] = (mutation, n - mutation)
    return out
