# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the policies read their options (pure): the given values over the defaults, and one check
that names the option it refuses."""

from __future__ import annotations


def with_given(cfg, config):
    """``cfg`` (the defaults) with every option ``config`` gives a value (not None); returns cfg."""
    cfg.update((key, value) for key, value in config.items() if value is not None)
    return cfg


def option_check(cfg):
    """``need(cond, name, text)``: raises ``ValueError("<name>: <text>, got <value>")`` when cond is false."""
    def need(cond, name, text):
        if not cond:
            raise ValueError("%s: %s, got %r" % (name, text, cfg[name]))
    return need
