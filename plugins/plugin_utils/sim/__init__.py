# -*- coding: utf-8 -*-
# Copyright: contributors to gridengine.balancer
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trace-driven simulator's core: SWF loading (swf.py) and the discrete-event engine (engine.py)."""
