# ansible-test bootstraps pip by downloading get-pip.py from a host that is unreachable here.
# scripts/setup.sh copies this file to ~/.ansible/test/cache/get_pip_<X_Y>.py instead: it installs
# the pip wheel bundled with the standard library (ensurepip), then lets that pip install what
# ansible-test asked for from the configured package index.
import ensurepip
import importlib
import os
import runpy
import sys

ensurepip.bootstrap(upgrade=True)
importlib.invalidate_caches()
os.environ.pop('PIP_CONFIG_FILE', None)
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
sys.argv = ['pip', 'install'] + args
runpy.run_module('pip', run_name='__main__', alter_sys=True)
