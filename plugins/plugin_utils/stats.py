# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load balancer statistics on the controller: a CSV row per poll, and PNG plots of each column.

The columns are StarCluster's ``sge-stats.csv`` columns (``SGEStats.get_all_stats``), in its
order: time, hosts, running_jobs, queued_jobs, slots, avg_duration, avg_wait, avg_load.  Unlike
StarCluster we write a header line once, write ``time`` as ISO 8601 UTC, and leave unknown values
empty instead of writing ``None``.

Plots are drawn with matplotlib's object API on the Agg canvas (no global backend switch, no
display needed), one PNG per statistic (``hosts.png``, ``running_jobs.png``, ...), each written to
a temporary file in the target directory and renamed over the old one, so a reader never sees a
half-written image.  matplotlib is imported only when plots are asked for.
"""

from __future__ import annotations

import csv
import datetime
import io
import os
import tempfile

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

COLUMNS = ("time", "hosts", "running_jobs", "queued_jobs", "slots", "avg_duration", "avg_wait", "avg_load")
PLOTTED = COLUMNS[1:]
STATS_FILE_NAME = "sge-stats.csv"
DEFAULT_BASE = os.path.join("~", ".gridengine-balancer")

_TITLES = {
    "hosts": "execution hosts",
    "running_jobs": "running jobs (tasks)",
    "queued_jobs": "queued jobs (tasks)",
    "slots": "slots",
    "avg_duration": "average job duration (s)",
    "avg_wait": "average job wait (s)",
    "avg_load": "average host load",
}


def default_dir(cluster, home=None):
    """``~/.gridengine-balancer/<cluster>/`` (StarCluster: ``~/.starcluster/sge/<cluster_tag>/``)."""
    if not cluster or "/" in cluster or cluster in (".", ".."):
        raise ValueError("cluster: %r cannot name a directory" % (cluster,))
    base = os.path.join(home, ".gridengine-balancer") if home else os.path.expanduser(DEFAULT_BASE)
    return os.path.join(base, cluster)


def format_time(epoch):
    return datetime.datetime.fromtimestamp(float(epoch), tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    """ISO 8601 (ours, or StarCluster's ``2011-03-03 21:05:37.123456``) or epoch -> aware datetime."""
    text = text.strip()
    try:
        return datetime.datetime.fromtimestamp(float(text), tz=datetime.timezone.utc)
    except ValueError:
        pass
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    return str(value)


def format_row(stats):
    """One CSV line (with its newline) for a plan's ``stats`` dict."""
    missing = [c for c in COLUMNS if c not in stats]
    if missing:
        raise ValueError("stats: missing column(s) %s" % ", ".join(missing))
    values = [format_time(stats["time"])] + [_cell(stats[c]) for c in COLUMNS[1:]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def append_row(path, stats):
    """Append one row to ``path``, writing the header first if the file is new or empty.

    Directories are created (0700).  The row is one ``write()`` on a file opened with O_APPEND,
    under an exclusive lock, then fsync'ed: two balancers writing the same file interleave whole
    lines, and a crash loses at most the last line.
    """
    path = os.path.expanduser(path)
    line = format_row(stats)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        data = line
        if os.fstat(fd).st_size == 0:
            data = ",".join(COLUMNS) + "\n" + line
        os.write(fd, data.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
    return path


def read_rows(path):
    """Rows of a stats CSV as dicts (time -> datetime, numbers -> float, empty -> None).

    A file without our header (StarCluster's headerless files) is read by column position.
    Malformed lines are skipped.
    """
    rows = []
    with open(os.path.expanduser(path), newline="", encoding="utf-8") as handle:
        for record in csv.reader(handle):
            if not record or record[0] == "time":
                continue
            if len(record) < len(COLUMNS):
                continue
            try:
                row = {"time": parse_time(record[0])}
                for name, text in zip(COLUMNS[1:], record[1:len(COLUMNS)]):
                    row[name] = float(text) if text.strip() not in ("", "None") else None
            except ValueError:
                continue
            rows.append(row)
    return rows


def _atomic_write_bytes(path, data):
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_plots(csv_path, out_dir, cluster=None, max_points=None):
    """Draw every statistic of ``csv_path`` over time into ``out_dir/<column>.png``.

    Returns the list of files written.  ``max_points`` keeps only the latest rows.
    """
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rows = read_rows(csv_path)
    if max_points:
        rows = rows[-max_points:]
    out_dir = os.path.expanduser(out_dir)
    os.makedirs(out_dir, mode=0o700, exist_ok=True)
    written = []
    for column in PLOTTED:
        points = [(r["time"], r[column]) for r in rows if r[column] is not None]
        fig = Figure(figsize=(8, 3.5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        if points:
            xs, ys = zip(*points)
            step = column in ("hosts", "slots", "running_jobs", "queued_jobs")
            if step:
                ax.step(xs, ys, where="post", linewidth=1.5)
            else:
                ax.plot(xs, ys, linewidth=1.5, marker="." if len(points) < 50 else None)
        else:
            ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
        title = _TITLES[column]
        ax.set_title("%s: %s" % (cluster, title) if cluster else title)
        ax.set_xlabel("time (UTC)")
        ax.set_ylabel(column)
        ax.grid(True, alpha=0.3)
        if column in ("hosts", "slots", "running_jobs", "queued_jobs"):
            ax.set_ylim(bottom=0)
        fig.autofmt_xdate()
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        target = os.path.join(out_dir, column + ".png")
        _atomic_write_bytes(target, buf.getvalue())
        written.append(target)
    return written
