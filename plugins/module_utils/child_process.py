# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parent's side of a forked child that reports through a pipe (target side, standard
library only, Python >= 3.8): local_node starts a detached process that way, task_data unpacks
as another user."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os


def collect_child(pid, read_fd, write_fd):
    """Closes the parent's ``write_fd``, reads what the child ``pid`` writes to ``read_fd`` until
    it closes the pipe, then reaps the child. Returns ``(data, status)``: the bytes read and
    the child's wait status (0 when it exited with 0)."""
    os.close(write_fd)
    chunks = []
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    dummy_pid, status = os.waitpid(pid, 0)
    return b"".join(chunks), status
