# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load balancer statistics on the controller: a CSV row per poll, and PNG plots of each column.

The columns are StarCluster's ``sge-stats.csv`` columns (``SGEStats.get_all_stats``), in its
order: time, hosts, running_jobs, queued_jobs, slots, avg_duration, avg_wait, avg_load.  Unlike
StarCluster we write a header line once, write ``time`` as ISO 8601 UTC, and leave unknown values
empty instead of writing ``None``.

With a price per instance hour (``instance_hour_price``) each row also gets four cost columns,
after StarCluster's: ``node_hours`` and ``cost`` of the interval since the previous row (the
previous row's ``hosts`` times the elapsed hours, times the price) and their running totals
``total_node_hours`` and ``total_cost``.  Without a price the file has StarCluster's columns only.
An existing file without the cost columns is rewritten once (atomically, old rows with empty cost
cells) the first time a price is given; once a file has them, node-hours keep being counted when
the price is dropped (cost cells empty, ``total_cost`` unchanged).  The header, when there is
one, says which columns a file has.

Plots are drawn with matplotlib's object API on the Agg canvas (no global backend switch, no
display needed), one PNG per statistic (``hosts.png``, ``running_jobs.png``, ...), each written to
a temporary file in the target directory and renamed over the old one, so a reader never sees a
half-written image.  matplotlib is imported only when plots are asked for.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
import tempfile

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

COLUMNS = ("time", "hosts", "running_jobs", "queued_jobs", "slots", "avg_duration", "avg_wait", "avg_load")
COST_COLUMNS = ("node_hours", "cost", "total_node_hours", "total_cost")
ALL_COLUMNS = COLUMNS + COST_COLUMNS
PLOTTED = COLUMNS[1:]
COST_PLOTS = ("node_hours", "cost")
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
    "node_hours": "node-hours",
    "cost": "cost",
}
_TAIL_BYTES = 16384


def default_dir(cluster, home=None):
    """``~/.gridengine-balancer/<cluster>/`` (StarCluster: ``~/.starcluster/sge/<cluster_tag>/``)."""
    if not cluster or "/" in cluster or cluster in (".", ".."):
        raise ValueError("cluster: %r cannot name a directory" % (cluster,))
    base = os.path.join(home, ".gridengine-balancer") if home else os.path.expanduser(DEFAULT_BASE)
    return os.path.join(base, cluster)


def format_time(epoch):
    return datetime.datetime.fromtimestamp(float(epoch), tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    """ISO 8601 (ours, or StarCluster's ``2011-03-03 21:05:37.123456``) or epoch -> aware datetime.

    Raises ValueError for anything else, an epoch out of the platform's range included.
    """
    text = text.strip()
    try:
        return datetime.datetime.fromtimestamp(float(text), tz=datetime.timezone.utc)
    except (ValueError, OverflowError, OSError):
        # not a number, or an epoch the platform's time_t cannot hold ("1e300", EOVERFLOW):
        # fromisoformat below reports it as a ValueError
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


def _cost_cell(value):
    # six decimals: running totals are read back from the file, so they must not lose much
    if value is None:
        return ""
    return ("%.6f" % value).rstrip("0").rstrip(".")


def _csv_line(values):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def format_row(stats, columns=COLUMNS):
    """One CSV line (with its newline) for a plan's ``stats`` dict, in the order of ``columns``.

    StarCluster's columns must be in ``stats``; a cost column missing from it is left empty.
    """
    missing = [c for c in COLUMNS if c not in stats]
    if missing:
        raise ValueError("stats: missing column(s) %s" % ", ".join(missing))
    values = []
    for name in columns:
        if name == "time":
            values.append(format_time(stats["time"]))
        elif name in COST_COLUMNS:
            values.append(_cost_cell(stats.get(name)))
        else:
            values.append(_cell(stats.get(name)))
    return _csv_line(values)


def check_price(price):
    """``instance_hour_price``: ``None`` (no cost columns) or a finite number >= 0, as a float."""
    if price is None:
        return None
    if isinstance(price, bool) or not isinstance(price, (int, float)):
        try:
            price = float(str(price).strip())
        except ValueError:
            raise ValueError("instance_hour_price: %r is not a number" % (price,))
    price = float(price)
    if not math.isfinite(price) or price < 0:
        raise ValueError("instance_hour_price: must be a finite number >= 0, got %r" % (price,))
    return price


def _epoch(value):
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    return float(value)


def account(previous, stats, price):
    """Node-hours and cost of the interval that ends with ``stats``, and the running totals.

    ``previous`` is the file's last row (as :func:`read_rows` returns it) or ``None``.  During the
    interval the cluster had the hosts the previous row saw (the plots draw hosts as a step that
    holds until the next row), so ``node_hours = previous hosts * elapsed hours``.  The first row,
    a row whose clock is not after the previous one, or a previous row without ``hosts`` adds 0.
    The totals continue the previous row's totals (0 when it has none: a file from before cost
    accounting).  Without a price (``None``) the node-hours are still counted, ``cost`` is empty
    and ``total_cost`` stays where it was.
    """
    price = check_price(price)
    node_hours = 0.0
    total_node_hours = 0.0
    total_cost = None
    if previous:
        hosts = previous.get("hosts")
        elapsed = _epoch(stats["time"]) - _epoch(previous["time"])
        if hosts is not None and elapsed > 0:
            node_hours = float(hosts) * elapsed / 3600.0
        total_node_hours = previous.get("total_node_hours") or 0.0
        total_cost = previous.get("total_cost")
    cost = None
    if price is not None:
        cost = node_hours * price
        total_cost = (total_cost or 0.0) + cost
    return {"node_hours": node_hours, "cost": cost,
            "total_node_hours": total_node_hours + node_hours, "total_cost": total_cost}


def _csv_record(line):
    """The fields of one CSV line; None when the line is not CSV (a stray carriage return, a
    field over the csv module's size limit)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return None


def _parse_record(record, columns):
    """One CSV record -> row dict, or None when it is a header or malformed."""
    if not record or record[0] == "time" or len(record) < len(COLUMNS):
        return None
    try:
        row = {"time": parse_time(record[0])}
        for name, text in zip(columns[1:], record[1:]):
            if name in ALL_COLUMNS:
                row[name] = float(text) if text.strip() not in ("", "None") else None
    except ValueError:
        return None
    for name in ALL_COLUMNS[1:]:
        row.setdefault(name, None)
    return row


def _file_layout(fd, size):
    """(columns of the file, its last readable row) from the first line and the tail of ``fd``."""
    first = os.pread(fd, min(size, 4096), 0).decode("utf-8", "replace").split("\n", 1)[0]
    header = _csv_record(first) if first.startswith("time,") else None
    columns = tuple(header) if header else COLUMNS
    offset = max(0, size - _TAIL_BYTES)
    tail = os.pread(fd, size - offset, offset).decode("utf-8", "replace").split("\n")
    if offset:
        tail = tail[1:]  # the first piece may be a partial line
    for line in reversed(tail):
        row = _parse_record(_csv_record(line), columns) if line.strip() else None
        if row is not None:
            return header, columns, row
    return header, columns, None


def _open_locked(path):
    """Open ``path`` for appending under an exclusive lock, the file the name points to now."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # replaced (a cost upgrade by another writer) while we waited: open it again


def write_row(path, stats, instance_hour_price=None):
    """Append one row to ``path`` and return it (with the cost columns when there is a price).

    The header is written first if the file is new or empty.  Directories are created (0700).  The
    row is one ``write()`` on a file opened with O_APPEND, under an exclusive lock, then fsync'ed:
    two balancers writing the same file interleave whole lines, and a crash loses at most the last
    line.  With a price, the previous row (read under the same lock) gives the interval's
    node-hours and the running totals; a file without the cost columns is rewritten once with them
    (temporary file renamed over it, old rows with empty cost cells).
    """
    price = check_price(instance_hour_price)
    format_row(stats)  # validates before anything is created
    path = os.path.expanduser(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = _open_locked(path)
    try:
        size = os.fstat(fd).st_size
        row = dict(stats)
        wanted = ALL_COLUMNS if price is not None else COLUMNS
        if size == 0:
            if price is not None:
                row.update(account(None, stats, price))
            data = _csv_line(wanted) + format_row(row, wanted)
            os.write(fd, data.encode("utf-8"))
            os.fsync(fd)
            return row
        header, columns, previous = _file_layout(fd, size)
        if price is not None or "total_node_hours" in columns:
            row.update(account(previous, stats, price))
        if all(c in columns for c in wanted):
            os.write(fd, format_row(row, columns).encode("utf-8"))
            os.fsync(fd)
            return row
        _upgrade(path, fd, size, header, columns, wanted, row)
        return row
    finally:
        os.close(fd)  # closing releases the lock


def _upgrade(path, fd, size, header, columns, wanted, row):
    """Rewrite the file with the columns ``wanted`` adds, then the new row; atomically."""
    new_columns = tuple(columns) + tuple(c for c in wanted if c not in columns)
    text = os.pread(fd, size, 0).decode("utf-8", "replace")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(new_columns)
    for line in io.StringIO(text):     # lines end at "\n" only: a stray "\r" keeps its line whole
        record = _csv_record(line)
        if record is None:
            out.write(line if line.endswith("\n") else line + "\n")   # kept as it was
            continue
        if not record or (header and record[0] == "time"):
            continue
        writer.writerow(record + [""] * (len(new_columns) - len(record)))
    out.write(format_row(row, new_columns))
    _atomic_write_bytes(path, out.getvalue().encode("utf-8"))


def append_row(path, stats, instance_hour_price=None):
    """:func:`write_row`, returning the file's path."""
    write_row(path, stats, instance_hour_price=instance_hour_price)
    return os.path.expanduser(path)


def read_rows(path):
    """Rows of a stats CSV as dicts (time -> datetime, numbers -> float, empty -> None).

    A header line says which columns follow (so files with and without the cost columns both
    read); a file without our header (StarCluster's headerless files) is read by column position.
    Every row has every key of ``ALL_COLUMNS`` (``None`` when the file lacks the column).
    Malformed lines (bytes that are not UTF-8 among them) are skipped.
    """
    rows = []
    columns = COLUMNS
    with open(os.path.expanduser(path), newline="", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            record = _csv_record(line)
            if record and record[0] == "time":
                columns = tuple(record)
                continue
            row = _parse_record(record, columns)
            if row is not None:
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

    When the file has cost rows, ``node_hours.png`` and ``cost.png`` are drawn too: the value of
    each interval (a step ending at its row, left axis) and the running total (right axis).
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
        written.append(_save_plot(fig, out_dir, column))
    for column in COST_PLOTS:
        total = "total_" + column
        points = [(r["time"], r[column], r[total]) for r in rows if r[total] is not None]
        if not points:
            continue
        fig = Figure(figsize=(8, 3.5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        xs, per_poll, totals = zip(*points)
        ax.step(xs, [0.0 if v is None else v for v in per_poll], where="pre", linewidth=1.0,
                color="tab:blue", label="per poll")
        ax.set_ylabel("%s per poll" % column, color="tab:blue")
        ax.set_ylim(bottom=0)
        ax2 = ax.twinx()
        ax2.plot(xs, totals, linewidth=1.5, color="tab:red", label="total")
        ax2.set_ylabel("total %s" % column, color="tab:red")
        ax2.set_ylim(bottom=0)
        title = "%s per poll and in total (%s)" % (_TITLES[column], _format_total(column, totals[-1]))
        ax.set_title("%s: %s" % (cluster, title) if cluster else title)
        ax.set_xlabel("time (UTC)")
        ax.grid(True, alpha=0.3)
        written.append(_save_plot(fig, out_dir, column))
    return written


def _save_plot(fig, out_dir, column):
    """Lays out ``fig`` (dates on the x axis), writes it atomically as ``<column>.png`` in
    ``out_dir`` and returns the file's path."""
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    target = os.path.join(out_dir, column + ".png")
    _atomic_write_bytes(target, buf.getvalue())
    return target


def _format_total(column, value):
    if column == "cost":
        return "total %.2f" % value
    return "total %.2f node-hours" % value
