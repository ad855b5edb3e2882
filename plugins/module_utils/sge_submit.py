# -*- coding: utf-8 -*-
# Copyright (c) gridengine.balancer developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job submission with ``qsub -terse`` (target side, standard library only).

Job names, paths and arguments are data: each becomes one element of the argv list, never part
of a string a shell reads.  What Grid Engine would refuse is refused here first, with the option
named, so that nothing is submitted half right.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gridengine.balancer.plugins.module_utils.sge_admin import (
    OBJECT_NAME_RE,
    OBJECT_NAME_RULE,
    name_error,
)

# Grid Engine's check of job names (verify_str_key with QSUB_TABLE, object_verify_name in
# source/libs/sgeobj of gridengine/gridengine): at most 512 characters, none of these, not
# starting with a digit, not one of the keywords NONE, ALL, TEMPLATE (any case).
JOB_NAME_FORBIDDEN = "\n\t\r/:@\\*?"
JOB_NAME_MAX = 512
JOB_NAME_KEYWORDS = ("NONE", "ALL", "TEMPLATE")
_FORBIDDEN_NAMES = {"\n": "newline", "\t": "tab", "\r": "carriage return"}

# a job id of at most 18 digits (Grid Engine's ids are 32-bit; a longer "id" is not one, and int()
# refuses strings of more than 4,300 digits with ValueError)
_TERSE_RE = re.compile(r"\A([0-9]{1,18})(?:\.([0-9]+-[0-9]+:[0-9]+))?\Z")


class SubmitError(ValueError):
    """Bad submission input or qsub output; the message names the option."""


def _char_name(char):
    return _FORBIDDEN_NAMES.get(char, repr(char))


def job_name_error(name):
    """Why Grid Engine would refuse ``name`` as a job name, or None."""
    if not isinstance(name, str) or not name:
        return "name: must be a non-empty string, got %r" % (name,)
    if len(name) > JOB_NAME_MAX:
        return "name: at most %d characters, got %d" % (JOB_NAME_MAX, len(name))
    bad = [c for c in JOB_NAME_FORBIDDEN if c in name]
    if bad:
        return ("name: %r contains %s, which Grid Engine refuses in job names (forbidden: newline, tab, "
                "carriage return, / : @ \\ * ?)" % (name, ", ".join(_char_name(c) for c in bad)))
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        # NUL cannot even be passed in an argv element; the others would corrupt qstat's output
        return "name: %r contains a control character (NUL, escape, ...)" % (name,)
    if name.startswith("-"):
        return "name: %r starts with '-', which would look like a qsub option" % (name,)
    if name[0].isdigit():
        return "name: %r starts with a digit, which Grid Engine refuses in job names" % (name,)
    if name.upper() in JOB_NAME_KEYWORDS:
        return "name: %r is a Grid Engine keyword (NONE, ALL, TEMPLATE), not a job name" % (name,)
    return None


def _no_control(option, value):
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise SubmitError("%s: %r contains a newline or another control character" % (option, value))


def _path(option, value, colon=True):
    if not isinstance(value, str) or not value:
        raise SubmitError("%s: must be a non-empty path, got %r" % (option, value))
    _no_control(option, value)
    if not colon and (":" in value or "," in value):
        raise SubmitError("%s: %r contains ':' or ',', which qsub reads as [host:]path lists; "
                          "give a plain path" % (option, value))
    return value


def resource_value(name, value):
    """``value`` as Grid Engine text: booleans TRUE/FALSE, numbers as written."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int) or isinstance(value, float):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        raise SubmitError("resources.%s: must be a string, number or boolean, got %s"
                          % (name, type(value).__name__))
    if not text or any(c.isspace() for c in text) or "," in text:
        raise SubmitError("resources.%s: %r must be non-empty, without spaces or commas" % (name, text))
    _no_control("resources.%s" % name, text)
    return text


def submit_args(script, args=None, name=None, queue=None, host=None, resources=None,
                working_directory=None, stdout_path=None, stderr_path=None):
    """qsub arguments (without the binary) for these inputs; raises SubmitError naming the option.

    ``-terse`` first, the options next, then the script and its arguments, each one element.
    """
    out = ["-terse"]
    if name is not None:
        msg = job_name_error(name)
        if msg:
            raise SubmitError(msg)
        out += ["-N", name]
    if host is not None:
        msg = name_error("host", host, "host")
        if msg:
            raise SubmitError(msg)
    if queue is not None:
        msg = name_error("queue", queue, "queue")
        if msg:
            raise SubmitError(msg)
    if queue is not None or host is not None:
        out += ["-q", "%s@%s" % (queue or "*", host) if host else queue]
    for key, value in (resources or {}).items():
        if not isinstance(key, str) or not OBJECT_NAME_RE.match(key):
            raise SubmitError("resources: %r is not a complex name (%s)" % (key, OBJECT_NAME_RULE))
        if key == "slots":
            raise SubmitError("resources: slots cannot be requested with -l; Grid Engine refuses it "
                              "(use a parallel environment)")
        out += ["-l", "%s=%s" % (key, resource_value(key, value))]
    if working_directory is not None:
        out += ["-wd", _path("working_directory", working_directory)]
    if stdout_path is not None:
        out += ["-o", _path("stdout_path", stdout_path, colon=False)]
    if stderr_path is not None:
        out += ["-e", _path("stderr_path", stderr_path, colon=False)]
    _path("script", script)
    if script.startswith("-"):
        raise SubmitError("script: %r starts with '-', which qsub would read as an option; "
                          "give it as ./%s" % (script, script))
    out.append(script)
    for index, arg in enumerate(args or []):
        if not isinstance(arg, str):
            raise SubmitError("args[%d]: must be a string, got %s" % (index, type(arg).__name__))
        if "\0" in arg:
            raise SubmitError("args[%d]: contains a NUL character" % index)
        out.append(arg)
    return out


def parse_terse(out):
    """``(job_id, tasks)`` from ``qsub -terse`` output (``123`` or ``123.1-10:1``)."""
    if isinstance(out, bytes):
        out = out.decode("utf-8", "replace")
    lines = [line.strip() for line in (out or "").splitlines() if line.strip()]
    for line in lines:
        match = _TERSE_RE.match(line)
        if match:
            return int(match.group(1)), match.group(2)
    raise SubmitError("qsub -terse printed no job id: %r" % (out,))
