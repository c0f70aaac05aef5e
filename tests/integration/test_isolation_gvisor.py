#!/usr/bin/python3
"""The isolation suite (isolation.py) in mode "gvisor"."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import isolation  # noqa: E402

isolation.main("gvisor")
